package server

import (
	"fmt"
	"net/http"
	"strings"
)

// What the compose files and scripts of users moving from other SQS
// emulators point at, answered as /healthz is (docs/migrating.md):
//
//	GET|HEAD /healthz              Baton's own: "ok", or 503 and the reason
//	GET|HEAD /health               goaws's (its image health-checks it with wget --spider)
//	GET|HEAD /_localstack/health   LocalStack's: {"services": {"sqs": "running", …}}
//
// A request to /health that names an Action is an SQS request to a queue
// named health, and is served as one.

// localStackHealthPath is LocalStack's health endpoint.
const localStackHealthPath = "/_localstack/health"

func isHealthRequest(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case "/healthz", localStackHealthPath:
		return true
	case "/health":
		return !r.URL.Query().Has("Action")
	}
	return false
}

// writeLocalStackHealth answers /_localstack/health as LocalStack does, in
// Python's JSON spacing ({"services": {"sqs": "running"}}), which the
// health checks that grep for `"sqs": "running"` need: each service Baton
// serves is "running", or "error" with a 503 while the store cannot be
// reached (notReady).
func (s *Server) writeLocalStackHealth(w http.ResponseWriter, notReady error) {
	state, status := "running", http.StatusOK
	if notReady != nil {
		state, status = "error", http.StatusServiceUnavailable
	}
	services := []string{"sqs"}
	if s.sns != nil {
		services = []string{"sns", "sqs"}
	}
	parts := make([]string, len(services))
	for i, name := range services {
		parts[i] = fmt.Sprintf("%q: %q", name, state)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"services\": {%s}}\n", strings.Join(parts, ", "))
}
