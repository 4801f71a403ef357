package flame_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// browser is headless chromium driven through the DevTools protocol on
// --remote-debugging-pipe: JSON messages ending in a NUL byte, commands
// on the child's fd 3, replies and events on its fd 4.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      *os.File
	out     chan map[string]any
	id      int
	session string
}

// cdpTimeout bounds each reply so a wedged browser fails the test instead
// of hanging it; it is not a measurement.
const cdpTimeout = 2 * time.Minute

func startBrowser(t *testing.T) *browser {
	t.Helper()
	exe := testutil.RequireTool(t, "chromium")
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "--window-size=1200,800", "about:blank")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	evW.Close()
	b := &browser{t: t, cmd: cmd, in: cmdW, out: make(chan map[string]any, 64)}
	go func() {
		defer close(b.out)
		defer evR.Close()
		r := bufio.NewReader(evR)
		for {
			msg, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(msg[:len(msg)-1], &m) == nil {
				b.out <- m
			}
		}
	}()
	t.Cleanup(func() {
		b.in.Close() // chromium exits when its command pipe closes
		done := make(chan struct{})
		go func() {
			for range b.out {
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(cdpTimeout):
			cmd.Process.Kill()
		}
		cmd.Wait()
	})
	return b
}

// call sends a command (to the attached page unless it is a Target
// command) and returns its result.
func (b *browser) call(method string, params map[string]any) map[string]any {
	b.t.Helper()
	b.id++
	msg := map[string]any{"id": b.id, "method": method, "params": params}
	if b.session != "" && !strings.HasPrefix(method, "Target.") {
		msg["sessionId"] = b.session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
	timeout := time.After(cdpTimeout)
	for {
		select {
		case m, ok := <-b.out:
			if !ok {
				b.t.Fatalf("%s: chromium closed the pipe", method)
			}
			if id, _ := m["id"].(float64); int(id) != b.id {
				continue // an event, or a reply to nothing we wait for
			}
			if e, ok := m["error"]; ok {
				b.t.Fatalf("%s: %v", method, e)
			}
			r, _ := m["result"].(map[string]any)
			return r
		case <-timeout:
			b.t.Fatalf("%s: no reply from chromium", method)
		}
	}
}

// open loads url in a new page, attaches to it and waits for its load
// event. Page.navigate replies once the new document is committed, so
// the evaluation that waits for "load" runs in it.
func (b *browser) open(url string) {
	b.t.Helper()
	r := b.call("Target.createTarget", map[string]any{"url": "about:blank"})
	r = b.call("Target.attachToTarget", map[string]any{"targetId": r["targetId"], "flatten": true})
	b.session, _ = r["sessionId"].(string)
	b.call("Page.navigate", map[string]any{"url": url})
	if loc, _ := b.eval(`new Promise(r => document.readyState === "complete" ? r(location.href) : addEventListener("load", () => r(location.href)))`).(string); loc != url {
		b.t.Fatalf("page at %q, want %q", loc, url)
	}
}

// eval evaluates a JavaScript expression in the page, awaiting a promise,
// and returns its value decoded from JSON.
func (b *browser) eval(expr string) any {
	b.t.Helper()
	r := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if ex, ok := r["exceptionDetails"]; ok {
		b.t.Fatalf("%s: %v", expr, ex)
	}
	res, _ := r["result"].(map[string]any)
	return res["value"]
}

func (b *browser) evalNumber(expr string) float64 {
	b.t.Helper()
	v, ok := b.eval(expr).(float64)
	if !ok {
		b.t.Fatalf("%s: not a number", expr)
	}
	return v
}

// mouse moves the mouse to the center of the frame named name, and
// clicks there if click is set.
func (b *browser) mouse(name string, click bool) {
	b.t.Helper()
	pos, ok := b.eval(fmt.Sprintf(`(() => {
		const d = [...document.querySelectorAll(".f")].find(e => e.textContent === %q);
		if (!d) return null;
		const r = d.getBoundingClientRect();
		return [r.x + r.width / 2, r.y + r.height / 2];
	})()`, name)).([]any)
	if !ok {
		b.t.Fatalf("no frame %q to point at", name)
	}
	at := map[string]any{"x": pos[0], "y": pos[1], "button": "none"}
	b.call("Input.dispatchMouseEvent", merge(at, map[string]any{"type": "mouseMoved"}))
	if click {
		b.call("Input.dispatchMouseEvent", merge(at, map[string]any{"type": "mousePressed", "button": "left", "clickCount": 1}))
		b.call("Input.dispatchMouseEvent", merge(at, map[string]any{"type": "mouseReleased", "button": "left", "clickCount": 1}))
	}
}

func (b *browser) key(key string) {
	b.t.Helper()
	b.call("Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": 27})
	b.call("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": 27})
}

func merge(a, b map[string]any) map[string]any {
	m := map[string]any{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// TestHTMLInteractive drives the page as a user does, with real input
// events: hovering shows the tooltip, a click zooms, typing in the search
// box highlights, Escape clears the search and then the zoom.
func TestHTMLInteractive(t *testing.T) {
	page := writeHTML(t, demo(), nil)
	b := startBrowser(t)
	b.open("file://" + page)

	width := func(name string) float64 {
		return b.evalNumber(fmt.Sprintf(`(() => { const d = [...document.querySelectorAll(".f")].find(e => e.textContent === %q); return d ? d.getBoundingClientRect().width : -1; })()`, name))
	}
	full := width("all")
	if full < 1000 {
		t.Fatalf("root frame %.0f px wide in a 1200 px window", full)
	}

	b.mouse("level2", false)
	if tip, _ := b.eval(`getComputedStyle(tip).display + "|" + tip.textContent`).(string); !strings.HasPrefix(tip, "block|level2") || !strings.Contains(tip, "70 samples") || !strings.Contains(tip, "70.00% of all") {
		t.Errorf("tooltip over level2: %q, want it shown with level2, 70 samples, 70%% of all", tip)
	}

	b.mouse("leaf", false)
	if tip, _ := b.eval(`tip.textContent`).(string); !strings.Contains(tip, "60 samples") || !strings.Contains(tip, "self 20") {
		t.Errorf("tooltip over leaf: %q, want 60 samples, self 20 (40 are in malloc)", tip)
	}

	b.mouse("level2", true)
	if have := width("level2"); have < full-2 {
		t.Errorf("after a click on level2 its width is %.1f, want %.1f", have, full)
	}
	if have, want := width("leaf"), full*60/70; have < want-2 || have > want+2 {
		t.Errorf("after the zoom leaf is %.1f px, want %.1f", have, want)
	}
	if have := width("gosrv"); have != -1 {
		t.Errorf("gosrv still drawn (%.1f px) after zooming into level2", have)
	}
	if h, _ := b.eval(`location.hash`).(string); !strings.HasPrefix(h, "#zoom=") {
		t.Errorf("location.hash %q after the zoom, want #zoom=…", h)
	}

	b.eval(`document.getElementById("search").focus()`)
	b.call("Input.insertText", map[string]any{"text": "malloc"})
	if m, _ := b.eval(`document.getElementById("matched").textContent + "|" + document.querySelectorAll(".f.m").length`).(string); m != "40.00%|1" {
		t.Errorf("after typing malloc: matched %q, want 40.00%% and one highlighted frame", m)
	}

	b.key("Escape") // clears the search
	if n := b.evalNumber(`document.querySelectorAll(".f.m").length`); n != 0 {
		t.Errorf("%v frames highlighted after Escape cleared the search", n)
	}
	b.eval(`document.getElementById("search").blur()`)
	b.key("Escape") // zooms out
	if have, want := width("level2"), full*70/100; have < want-2 || have > want+2 {
		t.Errorf("after Escape level2 is %.1f px, want %.1f (zoomed out)", have, want)
	}
	if dis, _ := b.eval(`document.getElementById("reset").disabled`).(bool); !dis {
		t.Errorf("Reset zoom enabled after zooming out")
	}
}

// TestHTMLInverted checks Options.Inverted: the root on top, the leaves
// below it; by default the other way round.
func TestHTMLInverted(t *testing.T) {
	b := startBrowser(t)
	for _, inverted := range []bool{false, true} {
		b.open("file://" + writeHTML(t, demo(), &flame.Options{Inverted: inverted}))
		top := func(name string) float64 {
			return b.evalNumber(fmt.Sprintf(`[...document.querySelectorAll(".f")].find(e => e.textContent === %q).getBoundingClientRect().top`, name))
		}
		if rootAbove := top("all") < top("malloc"); rootAbove != inverted {
			t.Errorf("Inverted %v: root above the leaf is %v", inverted, rootAbove)
		}
	}
}

// TestHTMLEmpty checks the page for no samples says so.
func TestHTMLEmpty(t *testing.T) {
	b := startBrowser(t)
	b.open("file://" + writeHTML(t, nil, nil))
	if have, _ := b.eval(`document.getElementById("graph").textContent`).(string); have != "No samples." {
		t.Errorf("graph of no samples says %q, want No samples.", have)
	}
}
