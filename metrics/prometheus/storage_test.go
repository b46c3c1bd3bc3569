package prometheus

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/openinformer/cache/compactstats"
)

// storageState is an informer state with fixed storage statistics.
type storageState struct{ stats compactstats.Stats }

func (storageState) HasSynced() bool               { return true }
func (storageState) IsStopped() bool               { return false }
func (storageState) CachedObjects() int            { return 30 }
func (s storageState) Storage() compactstats.Stats { return s.stats }

var storageNames = []string{"openinformer_storage_objects", "openinformer_storage_bytes", "openinformer_storage_tier_moves_total",
	"openinformer_storage_cooled_bytes_total",
	"openinformer_storage_reads_total", "openinformer_storage_dictionary_bytes", "openinformer_storage_sweep_seconds_total"}

// An informer with compact storage publishes its tiers, moves, reads and sweeps; one that keeps
// objects decoded publishes none of them.
func TestStorageSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	id := podsID(t)
	m.ObserveInformerState(id, storageState{})
	n, err := testutil.GatherAndCount(reg, storageNames...)
	require.NoError(t, err)
	require.Zero(t, n, "no series without compact storage")

	m.ObserveInformerState(id, storageState{compactstats.Stats{
		PlainObjects: 10, ColdObjects: 20, PlainBytes: 30000, ColdBytes: 5000,
		Cooled: 25, Warmed: 5, MoveFailures: 1, DictionaryBytes: 65536, SweepSeconds: 0.25,
		CooledFromBytes: 75000, CooledToBytes: 6000,
		HotReads: 7, PlainDecodes: 8, ColdDecodes: 9,
	}})
	base := map[string]string{"group": "", "name": "pods-informer", "resource": "pods", "version": "v1"}
	// l renders the informer's labels and one more, sorted as the registry writes them.
	l := func(kv ...string) string {
		all := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			all[kv[i]] = kv[i+1]
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(all)) {
			parts = append(parts, fmt.Sprintf("%s=%q", k, all[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	want := `
# HELP openinformer_storage_bytes Encoded bytes in the informer's compact storage by tier (plain or cold), as of the cold tier's last sweep.
# TYPE openinformer_storage_bytes gauge
openinformer_storage_bytes` + l("tier", "cold") + ` 5000
openinformer_storage_bytes` + l("tier", "plain") + ` 30000
# HELP openinformer_storage_cooled_bytes_total Encoded bytes of the objects the cold tier compressed, before (plain) and after (cold): cold over plain is the dictionary's compression ratio.
# TYPE openinformer_storage_cooled_bytes_total counter
openinformer_storage_cooled_bytes_total` + l("tier", "cold") + ` 6000
openinformer_storage_cooled_bytes_total` + l("tier", "plain") + ` 75000
# HELP openinformer_storage_dictionary_bytes Size of the cold tier's compression dictionaries.
# TYPE openinformer_storage_dictionary_bytes gauge
openinformer_storage_dictionary_bytes` + l() + ` 65536
# HELP openinformer_storage_objects Objects in the informer's compact storage by tier (plain or cold), as of the cold tier's last sweep.
# TYPE openinformer_storage_objects gauge
openinformer_storage_objects` + l("tier", "cold") + ` 20
openinformer_storage_objects` + l("tier", "plain") + ` 10
# HELP openinformer_storage_reads_total Reads of compact storage by how they were answered: hot (the hot cache), plain or cold (a decode of that tier).
# TYPE openinformer_storage_reads_total counter
openinformer_storage_reads_total` + l("answer", "cold") + ` 9
openinformer_storage_reads_total` + l("answer", "hot") + ` 7
openinformer_storage_reads_total` + l("answer", "plain") + ` 8
# HELP openinformer_storage_sweep_seconds_total Time the cold tier's background sweeps took.
# TYPE openinformer_storage_sweep_seconds_total counter
openinformer_storage_sweep_seconds_total` + l() + ` 0.25
# HELP openinformer_storage_tier_moves_total Objects the cold tier moved, by direction (cooled, warmed) or failed.
# TYPE openinformer_storage_tier_moves_total counter
openinformer_storage_tier_moves_total` + l("move", "cooled") + ` 25
openinformer_storage_tier_moves_total` + l("move", "failed") + ` 1
openinformer_storage_tier_moves_total` + l("move", "warmed") + ` 5
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), storageNames...))
}

var budgetNames = []string{"openinformer_storage_budget_bytes", "openinformer_storage_budgeted_bytes",
	"openinformer_storage_over_budget", "openinformer_storage_hot_objects_limit"}

// An informer with a memory budget publishes it, what it counts, the hot cache's size and
// whether its objects fit; one without a budget publishes none of these.
func TestStorageBudgetSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	id := podsID(t)
	m.ObserveInformerState(id, storageState{compactstats.Stats{PlainObjects: 10, PlainBytes: 30000}})
	n, err := testutil.GatherAndCount(reg, budgetNames...)
	require.NoError(t, err)
	require.Zero(t, n, "no budget series without a budget")

	m.ObserveInformerState(id, storageState{compactstats.Stats{
		ColdObjects: 20, ColdBytes: 5000, BudgetBytes: 4096, BudgetedBytes: 8200, OverBudget: true, HotLimit: 0,
	}})
	l := `{group="",name="pods-informer",resource="pods",version="v1"}`
	want := `
# HELP openinformer_storage_budget_bytes The informer's CompactOptions.MemoryBudget; only informers with one have the budget series.
# TYPE openinformer_storage_budget_bytes gauge
openinformer_storage_budget_bytes` + l + ` 4096
# HELP openinformer_storage_budgeted_bytes What the memory budget counts: every tier's encoded bytes, the store's cost per object and the hot cache's decoded objects, as estimated.
# TYPE openinformer_storage_budgeted_bytes gauge
openinformer_storage_budgeted_bytes` + l + ` 8200
# HELP openinformer_storage_hot_objects_limit The hot cache's size as the memory budget sets it.
# TYPE openinformer_storage_hot_objects_limit gauge
openinformer_storage_hot_objects_limit` + l + ` 0
# HELP openinformer_storage_over_budget 1 while the objects do not fit in the memory budget with every object that compresses compressed (every object is kept), else 0.
# TYPE openinformer_storage_over_budget gauge
openinformer_storage_over_budget` + l + ` 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), budgetNames...))
}
