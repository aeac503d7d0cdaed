package cli

import (
	"strings"
	"testing"
)

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

// --endpoint's help says once what its default is: its words said
// "(default: env …)" and pflag then added `(default "http://…")`.
func TestEndpointHelpHasOneDefault(t *testing.T) {
	t.Parallel()
	for _, path := range [][]string{{"queue"}, {"send"}, {"worker"}, {"doctor"}} {
		cmd, _, err := Main{}.root().Find(path)
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup("endpoint")
		if f == nil {
			f = cmd.PersistentFlags().Lookup("endpoint")
		}
		if f == nil {
			t.Fatalf("%v has no --endpoint", path)
		}
		if strings.Contains(f.Usage, "(default") {
			t.Errorf("%v --endpoint's help %q says (default itself, and pflag adds its own", path, f.Usage)
		}
	}
}
