package flame

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"html"
	"io"
	"slices"
	"strings"
)

//go:embed page.html
var page string

// The page's placeholders: the title (HTML-escaped) and the data (JSON
// with <, > and & escaped, so no name can end the script element).
const (
	titleMark = "<!--TITLE-->"
	dataMark  = "/*DATA*/null"
)

// htmlData is the JSON the page reads. Nodes is the call tree in
// preorder, nodeFields numbers per node: the index of its name in Names,
// its kind's index in Kinds times 2 plus 1 if inlined, the index of its
// object's base name in Names (0: none, Names[0] is ""), its total count
// and its number of children. Node 0 is the root "all".
type htmlData struct {
	Title    string   `json:"title"`
	Unit     string   `json:"unit"`
	Inverted bool     `json:"inverted"`
	Names    []string `json:"names"`
	Kinds    []string `json:"kinds"`
	Nodes    []uint64 `json:"nodes"`
}

const nodeFields = 5

type treeKey struct {
	parent    int32
	name, obj int32
	kind      int32
}

// tree is the call tree, its nodes in slices indexed by node number, the
// root node 0; one map finds a node's child by key.
type tree struct {
	keys   []treeKey
	totals []uint64
	index  map[treeKey]int32
}

func (t *tree) child(k treeKey, count uint64) int32 {
	c, ok := t.index[k]
	if !ok {
		c = int32(len(t.keys))
		t.index[k] = c
		t.keys = append(t.keys, k)
		t.totals = append(t.totals, 0)
	}
	t.totals[c] += count
	return c
}

type interner struct {
	idx  map[string]int
	list []string
}

func (in *interner) id(s string) int {
	if i, ok := in.idx[s]; ok {
		return i
	}
	in.idx[s] = len(in.list)
	in.list = append(in.list, s)
	return len(in.list) - 1
}

// WriteHTML writes samples as a self-contained interactive flame graph: one
// HTML page with its script, style and data inline, needing no network.
// Frames are named by Frame.Name and colored by FrameKind (inlined frames
// lighter); stacks with the same frames from the root are merged. In the
// page, a click zooms to a frame (a click on a frame below it, or Escape,
// zooms out), the search box highlights the frames whose names match (a
// regular expression, or plain text if it is not one, case-insensitive)
// and shows the matched share of all samples, and hovering shows a
// frame's full name, object and count. The URL fragment keeps the state,
// "#q=SEARCH&zoom=NODE" (NODE: a frame's data-id), and a page opened with
// it applies it. Errors are w's.
func WriteHTML(w io.Writer, samples []Sample, opts *Options) error {
	names := &interner{idx: map[string]int{"": 0}, list: []string{""}}
	kinds := &interner{idx: map[string]int{}}
	rootKind := int32(kinds.id(KindRoot) * 2)
	t := &tree{
		keys:   []treeKey{{parent: -1, name: int32(names.id("all")), kind: rootKind}},
		totals: []uint64{0},
		index:  map[treeKey]int32{},
	}
	for i := range samples {
		s := &samples[i]
		if s.Count == 0 || len(s.Frames) == 0 && s.Root == "" {
			continue
		}
		t.totals[0] += s.Count
		n := int32(0)
		if s.Root != "" {
			n = t.child(treeKey{parent: n, name: int32(names.id(s.Root)), kind: rootKind}, s.Count)
		}
		for j := len(s.Frames) - 1; j >= 0; j-- {
			f := &s.Frames[j]
			k := treeKey{parent: n, name: int32(names.id(f.Name())), obj: int32(names.id(objectName(f.Object))), kind: int32(kinds.id(FrameKind(*f)) * 2)}
			if f.Inlined {
				k.kind++
			}
			n = t.child(k, s.Count)
		}
	}
	d := htmlData{Title: opts.title(), Unit: opts.unit(), Inverted: opts != nil && opts.Inverted}
	d.Nodes = make([]uint64, 0, len(t.keys)*nodeFields)
	// Preorder, children sorted alphabetically as flamegraph.pl sorts
	// them: the layout does not depend on the order samples came in.
	// Each node's children, contiguous in order: order[first[n]:first[n+1]].
	first := make([]int32, len(t.keys)+1)
	for _, k := range t.keys[1:] {
		first[k.parent+1]++
	}
	for i := 1; i < len(first); i++ {
		first[i] += first[i-1]
	}
	order := make([]int32, len(t.keys))
	next := slices.Clone(first)
	for n, k := range t.keys[1:] {
		order[next[k.parent]] = int32(n + 1)
		next[k.parent]++
	}
	stack := []int32{0}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		k := t.keys[n]
		kids := order[first[n]:first[n+1]]
		d.Nodes = append(d.Nodes, uint64(k.name), uint64(k.kind), uint64(k.obj), t.totals[n], uint64(len(kids)))
		slices.SortFunc(kids, func(a, b int32) int {
			ka, kb := t.keys[a], t.keys[b]
			if c := strings.Compare(names.list[ka.name], names.list[kb.name]); c != 0 {
				return c
			}
			if c := strings.Compare(names.list[ka.obj], names.list[kb.obj]); c != 0 {
				return c
			}
			return int(ka.kind - kb.kind)
		})
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
	d.Names, d.Kinds = names.list, kinds.list
	data, err := json.Marshal(d) // escapes <, >, &, U+2028 and U+2029
	if err != nil {
		return err
	}
	head, rest, _ := strings.Cut(page, dataMark)
	title := html.EscapeString(d.Title)
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.ReplaceAll(head, titleMark, title))
	bw.Write(data)
	bw.WriteString(strings.ReplaceAll(rest, titleMark, title))
	return bw.Flush()
}

// objectName is the base name of an object, as the page shows it.
func objectName(obj string) string {
	obj = strings.TrimSuffix(obj, " (deleted)")
	if i := strings.LastIndexByte(obj, '/'); i >= 0 && i < len(obj)-1 {
		return obj[i+1:]
	}
	return obj
}
