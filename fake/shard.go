package fake

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
)

// ShardSelectorSupport is how a Server treats ListOptions.ShardSelector.
type ShardSelectorSupport int

const (
	// ShardSelectorsApplied filters lists and watches by the shard selector and echoes it in
	// the list's shardInfo, like an API server with the ShardedListAndWatch feature gate on.
	// It is the default.
	ShardSelectorsApplied ShardSelectorSupport = iota
	// ShardSelectorsIgnored serves every object whatever the selector, like an API server
	// with the gate off.
	ShardSelectorsIgnored
	// ShardSelectorsRejected answers any request carrying a shard selector with 400 Bad
	// Request, like a server or proxy that refuses the parameter.
	ShardSelectorsRejected
)

// uidFor makes the n-th UID: deterministic, yet spread over the hash space like the API
// server's random v4 UUIDs. Sequential UIDs would not do: FNV-1a barely stirs its high bits
// with the last bytes, so UIDs differing only at the end would all land in one shard.
func uidFor(n uint64) types.UID {
	hi, lo := splitmix64(n), splitmix64(^n)
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", hi>>32, hi>>16&0xffff, hi&0xfff, lo>>52, lo&0xffffffffffff))
}

// splitmix64 is a bijective 64-bit mixer (Steele, Lea and Flood's SplitMix64 finaliser).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// shardSelectorFor parses o.ShardSelector the way the API server's registry does. A nil
// selector means no shard filtering.
func (s *Server) shardSelectorFor(o metav1.ListOptions) (sharding.Selector, error) {
	if o.ShardSelector == "" || s.opts.ShardSelectors == ShardSelectorsIgnored {
		return nil, nil
	}
	if s.opts.ShardSelectors == ShardSelectorsRejected {
		return nil, apierrors.NewBadRequest("shardSelector is not supported by this server")
	}
	sel, err := parseShardSelector(o.ShardSelector)
	if err != nil {
		// The registry returns a plain error, which the API server's handler turns into a 500
		// with reason Unknown.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusInternalServerError,
			Reason:  metav1.StatusReasonUnknown,
			Message: "invalid shard selector: " + err.Error(),
		}}
	}
	return sel, nil
}

// shardMatches reports whether obj is in the selector's shard; no selector matches all.
func shardMatches(sel sharding.Selector, obj runtime.Object) bool {
	if sel == nil {
		return true
	}
	ok, err := sel.Matches(obj)
	return ok && err == nil
}

// echoShardInfo marks a list as a shard's subset, as the API server does.
func echoShardInfo(sel sharding.Selector, list runtime.Object) {
	if l, ok := list.(interface{ SetShardInfo(*metav1.ShardInfo) }); ok && sel != nil {
		l.SetShardInfo(&metav1.ShardInfo{Selector: sel.String()})
	}
}

// parseShardSelector accepts the API server's shard selector language: shardRange(field,
// 'start', 'end') calls joined by ||, with optional parentheses, checked with the same rules
// and messages as k8s.io/apiserver/pkg/sharding.Parse.
func parseShardSelector(expr string) (sharding.Selector, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("empty shard selector is not allowed; omit the parameter for unfiltered lists")
	}
	p := &shardParser{src: expr}
	reqs, err := p.or()
	if err == nil && p.peek() != "" {
		err = fmt.Errorf("CEL parse error: unexpected %q", p.peek())
	}
	if err != nil {
		return nil, err
	}
	for _, r := range reqs[1:] {
		if r.Key != reqs[0].Key {
			return nil, fmt.Errorf("all shard ranges must use the same field, got %q and %q", reqs[0].Key, r.Key)
		}
	}
	return sharding.NewSelector(reqs...), nil
}

// shardParser is a recursive-descent parser over the selector's few token kinds.
type shardParser struct {
	src string
	pos int
}

func (p *shardParser) or() ([]sharding.ShardRangeRequirement, error) {
	reqs, err := p.term()
	for err == nil && p.peek() == "||" {
		p.next()
		var more []sharding.ShardRangeRequirement
		more, err = p.term()
		reqs = append(reqs, more...)
	}
	return reqs, err
}

func (p *shardParser) term() ([]sharding.ShardRangeRequirement, error) {
	if p.peek() == "(" {
		p.next()
		reqs, err := p.or()
		if err == nil {
			err = p.expect(")")
		}
		return reqs, err
	}
	fn := p.next()
	if !isIdent(fn) {
		return nil, fmt.Errorf("CEL parse error: unexpected %q", fn)
	}
	if fn != "shardRange" {
		return nil, fmt.Errorf("unsupported function %q; only shardRange() and || are allowed", fn)
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	req, err := shardRangeCall(args)
	return []sharding.ShardRangeRequirement{req}, err
}

// args reads a call's arguments up to the closing parenthesis.
func (p *shardParser) args() ([]string, error) {
	var args []string
	for {
		arg := p.next()
		if arg == "" || arg == ")" || arg == "," {
			return nil, fmt.Errorf("CEL parse error: unexpected %q in shardRange()", arg)
		}
		args = append(args, arg)
		switch p.next() {
		case ")":
			return args, nil
		case ",":
		default:
			return nil, fmt.Errorf("CEL parse error: expected ',' or ')' in shardRange()")
		}
	}
}

func (p *shardParser) expect(tok string) error {
	if got := p.next(); got != tok {
		return fmt.Errorf("CEL parse error: expected %q, got %q", tok, got)
	}
	return nil
}

func (p *shardParser) peek() string {
	save := p.pos
	tok := p.next()
	p.pos = save
	return tok
}

// next returns the next token: an operator or parenthesis, a quoted string with its quotes,
// or a dotted identifier path; "" at the end.
func (p *shardParser) next() string {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
	rest := p.src[p.pos:]
	n := tokenLen(rest)
	p.pos += n
	return rest[:n]
}

func tokenLen(rest string) int {
	switch {
	case rest == "":
		return 0
	case strings.HasPrefix(rest, "||"), strings.HasPrefix(rest, "&&"):
		return 2
	case rest[0] == '\'' || rest[0] == '"':
		if end := strings.IndexByte(rest[1:], rest[0]); end >= 0 {
			return end + 2
		}
		return len(rest)
	}
	n := 0
	for n < len(rest) && (isIdentByte(rest[n]) || (n > 0 && rest[n] == '.')) {
		n++
	}
	return max(n, 1)
}

func isIdentByte(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func isIdent(tok string) bool {
	return tok != "" && isIdentByte(tok[0]) && !('0' <= tok[0] && tok[0] <= '9')
}

// shardRangeCall checks shardRange's three arguments.
func shardRangeCall(args []string) (sharding.ShardRangeRequirement, error) {
	if len(args) != 3 {
		return sharding.ShardRangeRequirement{}, fmt.Errorf("shardRange() requires exactly 3 arguments, got %d", len(args))
	}
	if !isIdent(args[0]) {
		return sharding.ShardRangeRequirement{}, fmt.Errorf("shardRange() first argument: expected field path (e.g. object.metadata.uid), got %q", args[0])
	}
	switch args[0] {
	case "object.metadata.uid", "object.metadata.namespace":
	default:
		return sharding.ShardRangeRequirement{}, fmt.Errorf("unsupported field path %q; supported: object.metadata.uid, object.metadata.namespace", args[0])
	}
	start, err := hexLiteral(args[1], "hexStart")
	if err != nil {
		return sharding.ShardRangeRequirement{}, err
	}
	end, err := hexLiteral(args[2], "hexEnd")
	if err != nil {
		return sharding.ShardRangeRequirement{}, err
	}
	if !sharding.HexLess(start, end) {
		return sharding.ShardRangeRequirement{}, fmt.Errorf("shard range start %s must be less than end %s", start, end)
	}
	return sharding.ShardRangeRequirement{Key: args[0], Start: start, End: end}, nil
}

// hexLiteral checks a range bound with the API server's rules and messages.
func hexLiteral(tok, name string) (string, error) {
	if len(tok) < 2 || (tok[0] != '\'' && tok[0] != '"') || tok[len(tok)-1] != tok[0] {
		return "", fmt.Errorf("%s must be a string literal (e.g. '0xff'), got %s", name, tok)
	}
	s := tok[1 : len(tok)-1]
	hex, ok := strings.CutPrefix(s, "0x")
	switch {
	case !ok:
		return "", fmt.Errorf("%s must have '0x' prefix, got %q", name, s)
	case hex == "":
		return "", fmt.Errorf("%s: hex value is required after '0x'", name)
	case len(hex) > 17:
		return "", fmt.Errorf("%s: hex value too long (%d chars, max 17): %q", name, len(hex), hex)
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", fmt.Errorf("%s: invalid hex character %q in %q", name, string(c), s)
		}
	}
	switch {
	case len(hex) == 17 && s != "0x10000000000000000":
		return "", fmt.Errorf("%s: 17-digit hex value must be '0x10000000000000000' (2^64), got %q", name, s)
	case len(hex) < 16:
		padded := "0x" + strings.Repeat("0", 16-len(hex)) + hex
		return "", fmt.Errorf("%s must be a 0x-prefixed 16-digit hex value, got %q (did you mean %q?)", name, s, padded)
	}
	return s, nil
}
