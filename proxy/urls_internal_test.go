package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

// fakeUpstream answers ListQueues with listAnswer and records the body of
// every other request.
type fakeUpstream struct {
	listAnswer string
	mu         sync.Mutex
	bodies     []string
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if r.Header.Get("X-Amz-Target") == "AmazonSQS.ListQueues" {
		io.WriteString(w, f.listAnswer)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	io.WriteString(w, `{}`)
}

func (f *fakeUpstream) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

// jsonCall sends one AWS JSON request to the proxy at base and returns
// its answer's body.
func jsonCall(t *testing.T, base, action, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", action, resp.StatusCode, b)
	}
	return string(b)
}

// An upstream that escapes '/' in its answers (valid JSON, as some
// encoders write it) and names its queues under two hosts, as SQS in
// us-east-1 may (sqs.us-east-1.amazonaws.com and the older
// queue.amazonaws.com): every queue URL handed out names the proxy, and
// each goes back to the host its own queue was named under, whichever the
// upstream named last.
func TestQueueURLsOfEveryHostAndSpelling(t *testing.T) {
	up := &fakeUpstream{listAnswer: `{"QueueUrls":["https:\/\/queue.amazonaws.com\/111\/a","https://sqs.us-east-1.amazonaws.com/111/b"]}`}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	p, err := New(Config{Upstream: upSrv.URL, Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	list := jsonCall(t, srv.URL, "ListQueues", `{}`)
	if want := `{"QueueUrls":["` + srv.URL + `/111/a","` + srv.URL + `/111/b"]}`; list != want {
		t.Errorf("ListQueues handed out\n%s\nwant\n%s", list, want)
	}
	for _, tt := range []struct{ name, upstream string }{
		{"a", "https://queue.amazonaws.com/111/a"},
		{"b", "https://sqs.us-east-1.amazonaws.com/111/b"},
	} {
		jsonCall(t, srv.URL, "SendMessage", `{"QueueUrl":"`+srv.URL+`/111/`+tt.name+`","MessageBody":"x"}`)
		if got, want := up.last(), `{"QueueUrl":"`+tt.upstream+`","MessageBody":"x"}`; got != want {
			t.Errorf("queue %s reached the upstream as\n%s\nwant\n%s", tt.name, got, want)
		}
	}
}
