package server_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/store/memstore"
)

// panicStore is a memory store whose QueueList panics once armed, so a
// ListQueues request panics in the middle of the engine.
type panicStore struct {
	baton.Store
	armed atomic.Bool
}

func (s *panicStore) QueueList(ctx context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	if s.armed.Load() {
		panic("panicStore: QueueList")
	}
	return s.Store.QueueList(ctx, p)
}

// TestPanicAnswersInTheRequestsProtocol: a panic while serving a request is
// recovered and answered as InternalError with HTTP 500, in the protocol the
// client speaks: XML to a Query client, JSON to a Query client that asks
// for JSON and to a JSON 1.0 client. No stack trace is sent.
func TestPanicAnswersInTheRequestsProtocol(t *testing.T) {
	st := &panicStore{Store: memstore.New()}
	srv := batontest.New(t, batontest.WithStore(st))
	st.armed.Store(true)

	query := func(accept string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL()+"/",
			strings.NewReader(url.Values{"Action": {"ListQueues"}, "Version": {"2012-11-05"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		return do(t, req)
	}

	t.Run("Query XML", func(t *testing.T) {
		resp := query("")
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("status %d, want 500; body %s", resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/xml" {
			t.Fatalf("Content-Type %q, want text/xml; body %s", ct, body)
		}
		var doc struct {
			XMLName xml.Name `xml:"ErrorResponse"`
			Error   struct {
				Type string
				Code string
			}
			RequestId string
		}
		if err := xml.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("body is no XML ErrorResponse: %v; body %s", err, body)
		}
		if doc.Error.Code != "InternalError" || doc.Error.Type != "Receiver" {
			t.Fatalf("error %+v, want InternalError from the Receiver; body %s", doc.Error, body)
		}
		if doc.RequestId == "" || doc.RequestId != resp.Header.Get("x-amzn-RequestId") {
			t.Fatalf("RequestId %q, header %q: want the same id", doc.RequestId, resp.Header.Get("x-amzn-RequestId"))
		}
		if strings.Contains(body, "panicStore") || strings.Contains(body, "goroutine") {
			t.Fatalf("the answer leaks the panic: %s", body)
		}
	})

	t.Run("Query JSON", func(t *testing.T) {
		resp := query("application/json")
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("status %d, want 500; body %s", resp.StatusCode, body)
		}
		var doc struct{ Error struct{ Code string } }
		if err := json.Unmarshal([]byte(body), &doc); err != nil || doc.Error.Code != "InternalError" {
			t.Fatalf("want a JSON Query error with Code InternalError, got %s (%v)", body, err)
		}
	})

	t.Run("JSON", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, srv.URL()+"/", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
		resp := do(t, req)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("status %d, want 500; body %s", resp.StatusCode, body)
		}
		var doc struct {
			Type string `json:"__type"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil || !strings.HasSuffix(doc.Type, "#InternalError") {
			t.Fatalf("want a JSON error of __type …#InternalError, got %s (%v)", body, err)
		}
	})
}

// readAll reads and closes resp's body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
