package main

import (
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"slices"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// nameSet is a realistic set of values of one hashed field.
type nameSet struct {
	name   string
	values []string
}

// realisticNames are the namespace sets the table measures, and random UIDs for comparison.
func realisticNames() []nameSet {
	numbered := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	var teams []string
	for c := 'a'; c <= 'z'; c++ {
		teams = append(teams, "team-"+string(c))
	}
	var apps []string
	for _, app := range []string{"payments", "checkout", "cart", "catalog", "search", "users", "auth", "orders",
		"shipping", "billing", "notifications", "inventory", "reviews", "recommendations", "frontend", "gateway"} {
		for _, env := range []string{"dev", "staging", "prod"} {
			apps = append(apps, app+"-"+env)
		}
	}
	uids := make([]string, 10000)
	for i := range uids {
		uids[i] = string(uuid.NewUUID())
	}
	return []nameSet{
		{"ns0..ns3", numbered("ns", 4)},
		{"ns0..ns99", numbered("ns", 100)},
		{"tenant-1..tenant-50", numbered("tenant-", 51)[1:]},
		{"team-a..team-z", teams},
		{"16 apps x dev/staging/prod", apps},
		{"system namespaces", []string{"default", "kube-system", "kube-public", "kube-node-lease", "cert-manager",
			"monitoring", "ingress-nginx", "argocd", "istio-system", "flux-system"}},
		{"10000 random UIDs", uids},
	}
}

// hash is KEP-5866's: 64-bit FNV-1a of the field's value.
func hash(value string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(value))
	return h.Sum64()
}

// evenShard is the shard of count even ranges holding h: floor(h*count/2^64), as
// sharding.Shard{Index, Count} splits the hash space.
func evenShard(h uint64, count int) int {
	hi, _ := bits.Mul64(h, uint64(count))
	return int(hi)
}

// perShard counts values per even shard.
func perShard(values []string, count int) []int {
	counts := make([]int, count)
	for _, v := range values {
		counts[evenShard(hash(v), count)]++
	}
	return counts
}

// quantileBounds returns count-1 split points between the sorted hashes of values: ranges
// ending there hold equal shares of today's values. They are valid shardRange bounds.
func quantileBounds(values []string, count int) []uint64 {
	hashes := make([]uint64, len(values))
	for i, v := range values {
		hashes[i] = hash(v)
	}
	slices.Sort(hashes)
	bounds := make([]uint64, count-1)
	for i := range bounds {
		bounds[i] = hashes[(i+1)*len(hashes)/count]
	}
	return bounds
}

// perQuantileShard counts values per range split at bounds.
func perQuantileShard(values []string, bounds []uint64) []int {
	counts := make([]int, len(bounds)+1)
	for _, v := range values {
		i, _ := slices.BinarySearch(bounds, hash(v)+1)
		counts[i]++
	}
	return counts
}

func joinCounts(counts []int) string {
	s := make([]string, len(counts))
	for i, c := range counts {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, " / ")
}

// printSpread writes the table of docs/SHARDING.md: values per shard with even ranges for each
// count, and with ranges split at today's quantiles for the largest count.
func printSpread(out io.Writer, counts []int) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprint(w, "| values")
	for _, c := range counts {
		fmt.Fprintf(w, "\t| %d even shards", c)
	}
	last := counts[len(counts)-1]
	fmt.Fprintf(w, "\t| %d shards split at quantiles\t|\n|---", last)
	for range len(counts) + 1 {
		fmt.Fprint(w, "\t|---")
	}
	fmt.Fprintln(w, "\t|")
	for _, set := range realisticNames() {
		fmt.Fprintf(w, "| %s", set.name)
		for _, c := range counts {
			fmt.Fprintf(w, "\t| %s", joinCounts(perShard(set.values, c)))
		}
		fmt.Fprintf(w, "\t| %s\t|\n", joinCounts(perQuantileShard(set.values, quantileBounds(set.values, last))))
	}
	return w.Flush()
}
