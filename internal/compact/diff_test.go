package compact

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// objDiff names where a and b differ under reflect.DeepEqual, for failure
// messages that a dump of two pods would bury.
func objDiff(a, b any) string {
	return strings.Join(differences(reflect.ValueOf(a), reflect.ValueOf(b), ""), "\n")
}

var timeType = reflect.TypeOf(time.Time{})

func differences(a, b reflect.Value, path string) []string {
	switch {
	case !a.IsValid() || !b.IsValid():
		if a.IsValid() != b.IsValid() {
			return []string{path + ": missing on one side"}
		}
		return nil
	case a.Type() != b.Type():
		return []string{fmt.Sprintf("%s: %v vs %v", path, a.Type(), b.Type())}
	case a.Type() == timeType:
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		if !reflect.DeepEqual(ta, tb) {
			return []string{fmt.Sprintf("%s: %v (%v) vs %v (%v)", path, ta, ta.Location(), tb, tb.Location())}
		}
		return nil
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return nilDifference(a, b, path)
		}
		return differences(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		var out []string
		for i := range a.NumField() {
			out = append(out, differences(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)...)
		}
		return out
	case reflect.Slice, reflect.Map:
		return collectionDifferences(a, b, path)
	}
	if a.CanInterface() && !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return []string{fmt.Sprintf("%s: %v vs %v", path, a.Interface(), b.Interface())}
	}
	return nil
}

func nilDifference(a, b reflect.Value, path string) []string {
	if a.IsNil() == b.IsNil() {
		return nil
	}
	return []string{fmt.Sprintf("%s: nil %v vs nil %v", path, a.IsNil(), b.IsNil())}
}

func collectionDifferences(a, b reflect.Value, path string) []string {
	if a.IsNil() != b.IsNil() {
		return nilDifference(a, b, path)
	}
	if a.Len() != b.Len() {
		return []string{fmt.Sprintf("%s: len %d vs %d", path, a.Len(), b.Len())}
	}
	var out []string
	if a.Kind() == reflect.Slice {
		for i := range a.Len() {
			out = append(out, differences(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	for _, k := range a.MapKeys() {
		out = append(out, differences(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))...)
	}
	return out
}
