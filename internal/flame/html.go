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
	name, obj int
	kind      int
}

type treeNode struct {
	key      treeKey
	total    uint64
	children map[treeKey]*treeNode
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
	root := &treeNode{key: treeKey{name: names.id("all"), kind: kinds.id(KindRoot) * 2}}
	for i := range samples {
		s := &samples[i]
		if s.Count == 0 || len(s.Frames) == 0 && s.Root == "" {
			continue
		}
		root.total += s.Count
		n := root
		if s.Root != "" {
			n = n.child(treeKey{name: names.id(s.Root), kind: kinds.id(KindRoot) * 2}, s.Count)
		}
		for j := len(s.Frames) - 1; j >= 0; j-- {
			f := &s.Frames[j]
			k := treeKey{name: names.id(f.Name()), obj: names.id(objectName(f.Object)), kind: kinds.id(FrameKind(*f)) * 2}
			if f.Inlined {
				k.kind++
			}
			n = n.child(k, s.Count)
		}
	}
	d := htmlData{Title: opts.title(), Unit: opts.unit(), Inverted: opts != nil && opts.Inverted}
	var flatten func(n *treeNode)
	flatten = func(n *treeNode) {
		d.Nodes = append(d.Nodes, uint64(n.key.name), uint64(n.key.kind), uint64(n.key.obj), n.total, uint64(len(n.children)))
		kids := make([]*treeNode, 0, len(n.children))
		for _, c := range n.children {
			kids = append(kids, c)
		}
		// Alphabetical, as flamegraph.pl sorts: the layout does not
		// depend on the order samples came in.
		slices.SortFunc(kids, func(a, b *treeNode) int {
			if c := strings.Compare(names.list[a.key.name], names.list[b.key.name]); c != 0 {
				return c
			}
			if c := strings.Compare(names.list[a.key.obj], names.list[b.key.obj]); c != 0 {
				return c
			}
			return a.key.kind - b.key.kind
		})
		for _, c := range kids {
			flatten(c)
		}
	}
	flatten(root)
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

func (n *treeNode) child(k treeKey, count uint64) *treeNode {
	c, ok := n.children[k]
	if !ok {
		if n.children == nil {
			n.children = map[treeKey]*treeNode{}
		}
		c = &treeNode{key: k}
		n.children[k] = c
	}
	c.total += count
	return c
}

// objectName is the base name of an object, as the page shows it.
func objectName(obj string) string {
	obj = strings.TrimSuffix(obj, " (deleted)")
	if i := strings.LastIndexByte(obj, '/'); i >= 0 && i < len(obj)-1 {
		return obj[i+1:]
	}
	return obj
}
