package cli

import "testing"

func TestEndpointRegion(t *testing.T) {
	t.Parallel()
	for endpoint, want := range map[string]string{
		"http://sqs.eu-central-1.localhost:9324": "eu-central-1",
		"https://ap-south-1.queue.example.com":   "ap-south-1",
		"http://127.0.0.1:9324":                  "us-east-1",
		"http://localhost:9324":                  "us-east-1",
		"http://[::1]:9324":                      "us-east-1",
		"%zz":                                    "us-east-1",
	} {
		if got := endpointRegion(endpoint); got != want {
			t.Errorf("endpointRegion(%q) = %q, want %q", endpoint, got, want)
		}
	}
}
