package dashboard_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// The browser tests drive Debian's Chromium (apt-get install chromium)
// through chromedp. They skip when it is missing, unless
// BATON_REQUIRE_CHROMIUM=1 (CI sets it), when they fail. BATON_CHROMIUM
// names another binary. Each test saves screenshots under its temp dir, and
// also under BATON_SCREENSHOT_DIR when that is set, to be looked at.

// browser is one Chromium shared by the tests; each test opens its own tab.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	err    error
}

func TestMain(m *testing.M) {
	code := skipnote.Main(m)
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dir != "" {
		os.RemoveAll(browser.dir)
	}
	os.Exit(code)
}

func chromiumPath() string {
	if p := os.Getenv("BATON_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// within runs f, giving up after d: the first action on a chromedp context
// must not carry a timeout of its own (it would bound the browser's life).
func within(d time.Duration, f func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(d):
		return fmt.Errorf("no answer within %v", d)
	}
}

func startBrowser() {
	path := chromiumPath()
	browser.dir, browser.err = os.MkdirTemp("", "baton-chromium-")
	if browser.err != nil {
		return
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(browser.dir),
		chromedp.WindowSize(1280, 900),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	browser.ctx = bctx
	browser.cancel = func() { bcancel(); acancel() }
	browser.err = within(60*time.Second, func() error { return chromedp.Do(bctx) })
}

// tab opens a tab of w×h CSS pixels, closed when the test ends, and
// returns a context bounded to two minutes for its actions.
func tab(t *testing.T, w, h int64, header map[string]string) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath()); err != nil {
		if os.Getenv("BATON_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("Chromium is not at %s and BATON_REQUIRE_CHROMIUM=1: %v", chromiumPath(), err)
		}
		skipnote.Skip(t, "Chromium", "Chromium is not at %s (apt-get install chromium); BATON_REQUIRE_CHROMIUM=1 makes this a failure", chromiumPath())
	}
	browser.once.Do(startBrowser)
	if browser.err != nil {
		t.Fatalf("starting Chromium: %v", browser.err)
	}
	tctx, tcancel := chromedp.NewContext(browser.ctx)
	err := within(30*time.Second, func() error {
		return chromedp.Do(tctx, chromedp.EmulateViewport(w, h), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if len(header) == 0 {
				return nil
			}
			if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			hs := network.Headers{}
			for k, v := range header {
				hs[k] = v
			}
			_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: hs})
			return err
		}))
	})
	if err != nil {
		tcancel()
		t.Fatalf("opening a tab: %v", err)
	}
	ctx, cancel := context.WithTimeout(tctx, 2*time.Minute)
	t.Cleanup(func() {
		cancel()
		tcancel()
	})
	return ctx
}

func basicHeader(id, secret string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))}
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%v\npage: %s", err, pageText(ctx))
	}
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(url))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it is truthy, for at most 30 s.
// A poll begun while a navigation swaps the page's JavaScript context
// finds that context gone: it is begun again in the new page's, within
// the same 30 s.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		if !contextSwapped(err) || time.Now().After(deadline) {
			t.Fatalf("waiting for %s (%s): %v\npage: %s", what, expr, err, pageText(ctx))
		}
	}
}

// contextSwapped reports whether err is Chromium's answer to a call made
// in a page's JavaScript context that a navigation replaced.
func contextSwapped(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Execution context was destroyed")
}

func pageText(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(s) > 3000 {
		s = s[:3000] + "…"
	}
	return s
}

// screenshot saves the whole page as name.png under the test's temp dir,
// and under BATON_SCREENSHOT_DIR when that is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	saveScreenshot(t, ctx, name, chromedp.FullScreenshot(100))
}

// viewportScreenshot saves what the viewport shows, such as a modal dialog
// over the page.
func viewportScreenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	saveScreenshot(t, ctx, name, chromedp.CaptureScreenshot())
}

func saveScreenshot(t *testing.T, ctx context.Context, name string, shot chromedp.Action[[]byte]) {
	t.Helper()
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv("BATON_SCREENSHOT_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// noHorizontalOverflow checks that nothing on the page is wider than the
// viewport.
func noHorizontalOverflow(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	type dims struct {
		Scroll float64 `json:"scroll"`
		Inner  float64 `json:"inner"`
		Widest string  `json:"widest"`
	}
	d := eval[dims](t, ctx, `(() => {
		let widest = '';
		for (const e of document.querySelectorAll('body *')) {
			const r = e.getBoundingClientRect();
			if (r.right > innerWidth + 0.5 && !e.closest('.visually-hidden')) { widest = e.tagName + '.' + e.className + ' ' + Math.round(r.right); break; }
		}
		return {scroll: document.scrollingElement.scrollWidth, inner: innerWidth, widest};
	})()`)
	if d.Scroll > d.Inner {
		t.Errorf("%s: scrollWidth %v > innerWidth %v (first too wide: %s)", page, d.Scroll, d.Inner, d.Widest)
	}
}

// noteSends makes the page note, from now on, each request other than a GET
// it makes, for sends to count.
func noteSends(t *testing.T, ctx context.Context) {
	t.Helper()
	eval[bool](t, ctx, `(() => {
		window.sends = [];
		const f = window.fetch;
		window.fetch = (url, opts) => {
			const method = (opts && opts.method) || 'GET';
			if (method !== 'GET') window.sends.push(method + ' ' + new URL(url, location.href).pathname);
			return f(url, opts);
		};
		return true;
	})()`)
}

// sends counts the requests noted by noteSends that are method to path,
// once the page has rendered a frame: a dialog's close event, whose
// listener may send one, comes at the rendering after the dialog closed.
func sends(t *testing.T, ctx context.Context, method, path string) int {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise((r) => requestAnimationFrame(() => r(true)))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("waiting for a frame: %v", err)
	}
	return eval[int](t, ctx, `window.sends.filter((s) => s === `+strconv.Quote(method+" "+path)+`).length`)
}

// activeID describes the focused element.
const activeID = `(() => { const a = document.activeElement; return a ? (a.id || a.getAttribute('href') || a.tagName) : ''; })()`

// tabUntil presses Tab until the element with the id has the focus and
// returns the ids focused on the way.
func tabUntil(t *testing.T, ctx context.Context, id string, max int) []string {
	t.Helper()
	var seen []string
	for range max {
		do(t, ctx, chromedp.KeyEvent("\t"))
		got := eval[string](t, ctx, activeID)
		seen = append(seen, got)
		if got == id {
			return seen
		}
	}
	t.Fatalf("%d Tabs did not reach #%s; focus went %s", max, id, strings.Join(seen, " → "))
	return nil
}
