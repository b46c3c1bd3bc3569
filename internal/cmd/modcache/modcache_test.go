package modcache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The module's own client-go: its directory holds its go.mod, and the
// version is the one required.
func TestDirOfARequiredModule(t *testing.T) {
	dir, version, err := Dir("", "", "k8s.io/client-go")
	require.NoError(t, err)
	assert.Regexp(t, `^v0\.[0-9]+\.[0-9]+`, version)
	_, err = os.Stat(filepath.Join(dir, "go.mod"))
	assert.NoError(t, err)
}

// A module the build does not require is an error naming the command.
func TestDirOfAModuleNotRequired(t *testing.T) {
	_, _, err := Dir("", "", "example.com/not/required")
	assert.ErrorContains(t, err, "go list -m")
}
