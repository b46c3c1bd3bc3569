package script

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `# header
# more

first
----

# about second
second arg
----
out 1
out 2

third
----
x
`

func TestParseAndRewriteRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.txt")
	require.NoError(t, os.WriteFile(path, []byte(sample), 0o644))
	blocks := Parse(t, path)
	require.Len(t, blocks, 3)
	assert.Equal(t, Block{Line: 4, Cmd: "first", Want: "", pre: "# header\n# more\n\n"}, blocks[0])
	assert.Equal(t, Block{Line: 8, Cmd: "second arg", Want: "out 1\nout 2\n", pre: "# about second\n"}, blocks[1])
	assert.Equal(t, "x\n", blocks[2].Want)
	Check(t, path, blocks, []string{"", "out 1\nout 2\n", "x\n"}, true)
	write(t, path, blocks, []string{"", "changed\n", "x\n"})
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# header\n# more\n\nfirst\n----\n\n# about second\nsecond arg\n----\nchanged\n\nthird\n----\nx\n", string(src))
}
