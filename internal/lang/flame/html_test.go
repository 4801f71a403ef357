package flame_test

import (
	"bytes"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

var docsShot = flag.Bool("docs", false, "write the screenshot of TestHTMLScreenshot to docs/flamegraph.png")

// writeHTML writes samples as a page in a temporary directory and returns
// its path.
func writeHTML(t *testing.T, samples []flame.Sample, opts *flame.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flame.html")
	var b bytes.Buffer
	if err := flame.Write(&b, flame.HTML, samples, opts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// chromium runs headless chromium on the page with extra flags and
// returns its standard output.
func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	exe := testutil.RequireTool(t, "chromium")
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,800"}
	cmd := exec.Command(exe, append(base, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, stderr.Bytes())
	}
	return out
}

// frameDiv is one frame as the page drew it.
type frameDiv struct {
	id      int
	class   string
	name    string
	width   float64
	matched bool
}

var divRE = regexp.MustCompile(`<div class="(f[^"]*)" data-id="(\d+)" data-v="\d+" style="[^"]*width: ([\d.]+)px[^"]*">([^<]*)</div>`)

// dumpFrames loads page with the URL fragment and returns the frames the
// script drew, by name (labelled ones only), and the whole DOM.
func dumpFrames(t *testing.T, page, fragment string) (map[string]frameDiv, string) {
	t.Helper()
	dom := string(chromium(t, "--dump-dom", "file://"+page+fragment))
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page's script did not finish:\n%s", dom)
	}
	frames := map[string]frameDiv{}
	for _, m := range divRE.FindAllStringSubmatch(dom, -1) {
		id, _ := strconv.Atoi(m[2])
		w, _ := strconv.ParseFloat(m[3], 64)
		name := htmlUnescape(m[4])
		cls := " " + m[1] + " "
		frames[name] = frameDiv{id: id, class: m[1], name: name, width: w, matched: strings.Contains(cls, " m ")}
	}
	return frames, dom
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

// TestHTMLChromium opens the page in headless chromium: every frame of the
// demo is drawn with a width proportional to its count, a search from the
// URL highlights the matching frames and reports their share, and a zoom
// from the URL widens the zoomed frame to the full width.
func TestHTMLChromium(t *testing.T) {
	page := writeHTML(t, demo(), &flame.Options{Title: "demo"})

	frames, dom := dumpFrames(t, page, "")
	for _, name := range []string{"all", "server", "gosrv", "main", "level1", "level2", "level3", "leaf", "malloc", "main.add", "main.work", "runtime.main"} {
		if _, ok := frames[name]; !ok {
			t.Errorf("no frame %q in the page", name)
		}
	}
	if t.Failed() {
		t.Fatalf("DOM:\n%s", dom)
	}
	full := frames["all"].width
	for name, count := range map[string]float64{"server": 85, "level2": 70, "leaf": 60, "malloc": 40, "gosrv": 15} {
		if have, want := frames[name].width, full*count/100; have < want-2 || have > want+2 {
			t.Errorf("%s: width %.1f px, want %.1f (%v%% of %.1f)", name, have, want, count, full)
		}
	}
	if !strings.Contains(frames["main.add"].class, "i") {
		t.Errorf("inlined main.add has class %q, want i", frames["main.add"].class)
	}

	// Search: level1, level2 and level3 match; the share counts nested
	// matches once: level1's 85 of 100.
	frames, dom = dumpFrames(t, page, "#q=^level")
	var matched []string
	for name, f := range frames {
		if f.matched {
			matched = append(matched, name)
		}
	}
	if strings.Join(sorted(matched), ",") != "level1,level2,level3" {
		t.Errorf("matched frames %v, want level1, level2, level3", matched)
	}
	if !strings.Contains(dom, `data-matched="85"`) || !strings.Contains(dom, `<b id="matched">85.00%</b>`) {
		t.Errorf("search status does not say 85 samples, 85.00%%:\n%s", statusOf(dom))
	}

	// Zoom on level2: it gets the full width, its subtree grows by
	// 100/70, other subtrees go, its ancestors stay, dimmed.
	id := frames["level2"].id
	frames, dom = dumpFrames(t, page, "#zoom="+strconv.Itoa(id))
	if have := frames["level2"].width; have < full-2 {
		t.Errorf("zoomed level2: width %.1f, want %.1f", have, full)
	}
	if have, want := frames["leaf"].width, full*60/70; have < want-2 || have > want+2 {
		t.Errorf("leaf under zoomed level2: width %.1f, want %.1f", have, want)
	}
	for _, gone := range []string{"gosrv", "main.add", "LHello:::run", "LHello;::run"} {
		if _, ok := frames[gone]; ok {
			t.Errorf("frame %q outside the zoomed level2 is still drawn", gone)
		}
	}
	if f, ok := frames["level1"]; !ok || !strings.Contains(f.class, "a") || f.width < full-2 {
		t.Errorf("level1 (an ancestor of the zoom) %+v, want full width, dimmed", f)
	}
	if !strings.Contains(dom, "zoomed: server") {
		t.Errorf("no zoom path in the page:\n%s", dom)
	}
}

func statusOf(dom string) string {
	if i := strings.Index(dom, `id="status"`); i >= 0 {
		return dom[i:min(len(dom), i+300)]
	}
	return dom
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestHTMLEscaping puts markup and script into frame names, the root and
// the title: the page must show them as text, run no injected script and
// still draw the graph.
func TestHTMLEscaping(t *testing.T) {
	evil := []string{
		`</script><script>document.title="pwned"</script>`,
		`"><img src=x onerror="document.title='pwned'">`,
		`'single' & "double" <!-- \u2028`,
		"line\u2028sep\u2029para",
	}
	var samples []flame.Sample
	for i, name := range evil {
		samples = append(samples, flame.Sample{Root: "r" + strconv.Itoa(i), Count: uint64(10 + i), Frames: []flame.Frame{{Symbol: name, Object: app}, fr("main")}})
	}
	samples = append(samples, flame.Sample{Root: `</script><b id="rootinj">`, Count: 5, Frames: []flame.Frame{fr("ok")}})
	page := writeHTML(t, samples, &flame.Options{Title: `</title><script>document.title="pwned"</script>`})
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.ToLower(string(raw)), "</script"); n != 2 {
		t.Errorf("the page has %d </script, want 2 (data and code)", n)
	}
	frames, dom := dumpFrames(t, page, "")
	for _, name := range evil[:3] {
		if _, ok := frames[name]; !ok {
			t.Errorf("frame %q not shown as text", name)
		}
	}
	if strings.Contains(dom, "pwned</title>") || strings.Contains(dom, "<img") || strings.Contains(dom, `<b id="rootinj"`) {
		t.Errorf("injected markup ran or was parsed:\n%s", dom)
	}
	if !strings.Contains(dom, "<title>&lt;/title&gt;&lt;script&gt;") {
		t.Errorf("title not escaped:\n%s", dom[:min(len(dom), 2000)])
	}
}

// TestHTMLScreenshot takes a screenshot of the demo page and checks it is
// not blank: many pixels are neither the background nor gray. The search
// "malloc" is applied from the URL, to show its highlighting. With -docs
// it writes the screenshot to docs/flamegraph.png.
func TestHTMLScreenshot(t *testing.T) {
	page := writeHTML(t, screenshotDemo(), &flame.Options{Title: "demo server: malloc and friends"})
	shot := filepath.Join(t.TempDir(), "shot.png")
	chromium(t, "--window-size=1000,330", "--hide-scrollbars", "--screenshot="+shot, "file://"+page+"#q=malloc")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	colored := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			hi, lo := max(r, g, bl)>>8, min(r, g, bl)>>8
			if hi-lo > 40 {
				colored++
			}
		}
	}
	total := b.Dx() * b.Dy()
	if colored < total/5 {
		t.Errorf("%d of %d pixels colored, want at least a fifth: a blank page?", colored, total)
	}
	if *docsShot {
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("../../../docs/flamegraph.png", data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
