package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageData is what a page template is given. The page's live content comes
// from the admin API; the template lays out the page and its forms.
type pageData struct {
	Title string
	// Page names the page for app.js: queues, queue, messages, message,
	// topics, topic or sms.
	Page    string
	Queue   string
	Message string
	Topic   string
	// Version changes with the embedded assets, so their URLs do.
	Version string
	// LeasesOnly, Note and Queues are the Options the handler was made
	// with; Queues is read for the queues page.
	LeasesOnly bool
	Note       string
	Queues     []string
}

// Options makes a dashboard that shows only what a lease ledger knows, for
// `baton proxy`, which sees the traffic to a queue but not the queue.
type Options struct {
	// LeasesOnly leaves out everything but the lease panels: the queues
	// page lists Queues() with no counts and no create form, a queue's page
	// shows the lease doctor, leases in flight, lease durations, activity
	// and late completions (no counts, attributes, messages, send, purge,
	// delete or redrive), and the message timeline is as ever.
	LeasesOnly bool
	// Note is shown at the top of every page: what the dashboard cannot
	// see.
	Note string
	// Queues lists the queues, in order, for the queues page when
	// LeasesOnly.
	Queues func() []string
}

// asset is an embedded static file, served with a strong ETag.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

type handler struct {
	opts    Options
	pages   map[string]*template.Template
	assets  map[string]asset
	version string
	mux     *http.ServeMux
}

// IsPageRequest tells a request for the dashboard's pages from an SQS API
// request on the same port: a GET or HEAD of /, /ui or a path under /ui/
// that has neither an Action parameter (Query protocol) nor an
// X-Amz-Target header (JSON protocol).
func IsPageRequest(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if r.URL.Path != "/" && r.URL.Path != "/ui" && !strings.HasPrefix(r.URL.Path, "/ui/") {
		return false
	}
	if _, isJSON := r.Header["X-Amz-Target"]; isJSON {
		return false
	}
	return !r.URL.Query().Has("Action")
}

// Handler returns the dashboard's handler. It serves GET and HEAD of
//
//	/                                   the queues page
//	/ui/queues/{name}                   a queue
//	/ui/queues/{name}/messages          its messages, browsed without receiving them
//	/ui/queues/{name}/messages/{id}     a message's lease timeline
//	/ui/topics                          the SNS topics, their subscriptions and where recent publishes went
//	/ui/topics/{name}                   a topic: its subscriptions and what was recorded, not sent, to them
//	/ui/sms                             the SMS published to phone numbers, recorded, not sent
//	/ui/static/{file}                   the embedded script, style sheet and icon
//
// and a 404 page for other paths under /ui/. The pages read their data from
// /admin/api/, which the caller serves. The caller decides which requests
// reach it (the SQS API shares the root) and authenticates them.
func Handler() http.Handler { return HandlerWith(Options{}) }

// HandlerWith is Handler with opts.
func HandlerWith(opts Options) http.Handler {
	h := &handler{opts: opts, pages: make(map[string]*template.Template), assets: make(map[string]asset), mux: http.NewServeMux()}
	sum := sha256.New()
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		fileSum := sha256.Sum256(b)
		sum.Write(fileSum[:])
		h.assets[strings.TrimPrefix(p, "static/")] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(fileSum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("dashboard: embedded assets: " + err.Error()) // the build embeds them: cannot happen
	}
	h.version = hex.EncodeToString(sum.Sum(nil)[:6])
	layout := template.Must(template.ParseFS(templateFS, "templates/layout.html", "templates/record.html"))
	for _, name := range []string{"queues", "queue", "messages", "message", "topics", "topic", "sms", "notfound"} {
		h.pages[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
	}
	h.mux.HandleFunc("GET /{$}", h.queues)
	h.mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusSeeOther) })
	h.mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusSeeOther) })
	h.mux.HandleFunc("GET /ui/queues/{name}", h.queue)
	h.mux.HandleFunc("GET /ui/queues/{name}/messages/{id}", h.message)
	if !opts.LeasesOnly {
		h.mux.HandleFunc("GET /ui/queues/{name}/messages", h.messages)
	}
	if !opts.LeasesOnly {
		h.mux.HandleFunc("GET /ui/topics", h.topics)
		h.mux.HandleFunc("GET /ui/topics/{name}", h.topic)
		h.mux.HandleFunc("GET /ui/sms", h.sms)
	}
	h.mux.HandleFunc("GET /ui/static/{file}", h.static)
	h.mux.HandleFunc("/", h.notFound)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	// Everything the pages use is served from here: no inline script or
	// style, no other origin, no framing.
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	h.mux.ServeHTTP(w, r)
}

func (h *handler) queues(w http.ResponseWriter, r *http.Request) {
	if h.opts.LeasesOnly {
		// The list is drawn here: the page's script has no live view of it.
		var names []string
		if h.opts.Queues != nil {
			names = h.opts.Queues()
		}
		h.render(w, http.StatusOK, "queues", pageData{Title: "Queues", Page: "queue-list", Queues: names})
		return
	}
	h.render(w, http.StatusOK, "queues", pageData{Title: "Queues", Page: "queues"})
}

func (h *handler) queue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	h.render(w, http.StatusOK, "queue", pageData{Title: name, Page: "queue", Queue: name})
}

func (h *handler) messages(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	h.render(w, http.StatusOK, "messages", pageData{Title: name + " messages", Page: "messages", Queue: name})
}

func (h *handler) message(w http.ResponseWriter, r *http.Request) {
	name, id := r.PathValue("name"), r.PathValue("id")
	h.render(w, http.StatusOK, "message", pageData{Title: "Message " + id, Page: "message", Queue: name, Message: id})
}

func (h *handler) topics(w http.ResponseWriter, r *http.Request) {
	h.render(w, http.StatusOK, "topics", pageData{Title: "Topics", Page: "topics"})
}

func (h *handler) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	h.render(w, http.StatusOK, "topic", pageData{Title: name, Page: "topic", Topic: name})
}

func (h *handler) sms(w http.ResponseWriter, r *http.Request) {
	h.render(w, http.StatusOK, "sms", pageData{Title: "SMS to phone numbers", Page: "sms"})
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.render(w, http.StatusNotFound, "notfound", pageData{Title: "Not found", Page: "notfound"})
}

func (h *handler) render(w http.ResponseWriter, status int, page string, data pageData) {
	data.Version = h.version
	data.LeasesOnly, data.Note = h.opts.LeasesOnly, h.opts.Note
	var b bytes.Buffer
	if err := h.pages[page].ExecuteTemplate(&b, "layout", data); err != nil {
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

func (h *handler) static(w http.ResponseWriter, r *http.Request) {
	a, ok := h.assets[r.PathValue("file")]
	if !ok {
		h.notFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("ETag", a.etag)
	if r.URL.Query().Get("v") == h.version {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
