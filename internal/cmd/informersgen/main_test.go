package main

import "testing"

// The checked-in file is what this generator makes from the client-go
// go.mod requires (make generate-check, as a test).
func TestGeneratedFileIsUpToDate(t *testing.T) {
	if err := run("../../../informers/zz_generated.go", "", "!clientgo_v038", true); err != nil {
		t.Fatal(err)
	}
}
