//go:build !race

package coldtier

const raceEnabled = false
