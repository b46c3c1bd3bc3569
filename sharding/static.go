package sharding

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// FromOrdinal returns shard ordinal of count for a StatefulSet pod: podName is its name
// (or hostname), which ends in "-<ordinal>", as in kube-state-metrics' automatic sharding.
func FromOrdinal(podName string, count int) (Shard, error) {
	i := strings.LastIndexByte(podName, '-')
	ordinal, err := strconv.Atoi(podName[i+1:])
	if i < 0 || err != nil || ordinal < 0 {
		return Shard{}, fmt.Errorf("pod name %q does not end in a StatefulSet ordinal (-0, -1, ...)", podName)
	}
	s := Shard{Index: ordinal, Count: count}
	if _, err := s.requirements(); err != nil {
		return Shard{}, fmt.Errorf("pod %q: %w", podName, err)
	}
	return s, nil
}

// BindFlags registers --shard-index, --shard-count and --shard-field on fs, filling s. The
// defaults (index 0 of 1) own the whole collection, so a binary runs unsharded until told.
func (s *Shard) BindFlags(fs *flag.FlagSet) {
	if s.Count == 0 {
		s.Count = 1
	}
	fs.IntVar(&s.Index, "shard-index", s.Index, "this replica's shard, 0 <= index < count")
	fs.IntVar(&s.Count, "shard-count", s.Count, "number of shards the collection is split into")
	fs.StringVar(&s.Field, "shard-field", s.Field, "field hashed to pick the shard: "+ByUID+" (default) or "+ByNamespace)
}
