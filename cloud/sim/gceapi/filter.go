package gceapi

import (
	"fmt"
	"regexp"
	"strings"
)

// filter is a parsed list filter: comparisons that must all hold. GCE's grammar is larger
// (OR, NOT, the regular-expression operators eq/ne, has ':'); the face accepts the
// conjunctions clients use in practice (`labels.schooner-job = "x" AND status != TERMINATED`,
// `(operationType = "compute.instances.preempted") (targetId = 123)`) and rejects the rest
// with 400, so an unsupported filter never silently matches more than asked.
type filter []comparison

var fieldRE = regexp.MustCompile(`^[A-Za-z][-A-Za-z0-9_.]*$`)

type comparison struct {
	field string
	neq   bool
	value string
	glob  bool // an unquoted value may use * as a wildcard
}

// fields resolves a field path (labels.k, status, ...) on one item.
type fields func(path string) (string, bool)

// fieldTable resolves the paths of getters, each to what its getter returns.
func fieldTable(getters map[string]func() string) fields {
	return func(path string) (string, bool) {
		if get, ok := getters[path]; ok {
			return get(), true
		}
		return "", false
	}
}

func (f filter) match(get fields) bool {
	for _, c := range f {
		v, ok := get(c.field)
		eq := ok && c.matchValue(v)
		if eq == c.neq {
			return false
		}
	}
	return true
}

func (c comparison) matchValue(v string) bool {
	if !c.glob || !strings.Contains(c.value, "*") {
		return v == c.value
	}
	parts := strings.Split(c.value, "*")
	if !strings.HasPrefix(v, parts[0]) {
		return false
	}
	v = v[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(v, p)
		if i < 0 {
			return false
		}
		v = v[i+len(p):]
	}
	return strings.HasSuffix(v, last)
}

// parseFilter parses s; the empty filter matches everything.
func parseFilter(s string) (filter, error) {
	p := &filterParser{s: s}
	var out filter
	for {
		tok := p.next()
		switch {
		case tok == "":
			return out, nil
		case tok == "(" || tok == ")" || strings.EqualFold(tok, "AND"):
			continue
		case strings.EqualFold(tok, "OR") || strings.EqualFold(tok, "NOT"):
			return nil, fmt.Errorf("filter operator %s is not supported here", tok)
		}
		if !fieldRE.MatchString(tok) {
			return nil, fmt.Errorf("unexpected %q where a field name belongs", tok)
		}
		c := comparison{field: tok}
		switch op := p.next(); op {
		case "=":
		case "!=":
			c.neq = true
		default:
			return nil, fmt.Errorf("expected = or != after %q, got %q", tok, op)
		}
		val, quoted, ok := p.value()
		if !ok {
			return nil, fmt.Errorf("missing value for %q", c.field)
		}
		c.value, c.glob = val, !quoted
		out = append(out, c)
	}
}

type filterParser struct {
	s   string
	pos int
}

func (p *filterParser) skipSpace() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n') {
		p.pos++
	}
}

// next returns the next token: a parenthesis, an operator or a bare word.
func (p *filterParser) next() string {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return ""
	}
	switch ch := p.s[p.pos]; {
	case ch == '(' || ch == ')' || ch == '=':
		p.pos++
		return string(ch)
	case ch == '!' && p.pos+1 < len(p.s) && p.s[p.pos+1] == '=':
		p.pos += 2
		return "!="
	}
	start := p.pos
	for p.pos < len(p.s) && !strings.ContainsRune(" \t\n()=!", rune(p.s[p.pos])) {
		p.pos++
	}
	if p.pos == start { // a lone '!': hand it on so the caller reports it
		p.pos++
	}
	return p.s[start:p.pos]
}

// value reads a quoted string ("..." with \" escapes) or a bare word.
func (p *filterParser) value() (v string, quoted, ok bool) {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return "", false, false
	}
	if p.s[p.pos] != '"' && p.s[p.pos] != '\'' {
		w := p.next()
		return w, false, w != "" && w != "(" && w != ")"
	}
	q := p.s[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		ch := p.s[p.pos]
		p.pos++
		switch {
		case ch == '\\' && p.pos < len(p.s):
			b.WriteByte(p.s[p.pos])
			p.pos++
		case ch == q:
			return b.String(), true, true
		default:
			b.WriteByte(ch)
		}
	}
	return "", true, false
}
