package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"gopkg.in/yaml.v3"

	"github.com/baton-sqs/baton/internal/testutil"
)

// writeConfig writes a config file into a temporary directory.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "baton.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// getAttrs reads every attribute of the queue name through c.
func getAttrs(t *testing.T, c *sqs.Client, base, name string) map[string]string {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(base + "/" + name), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", name, err)
	}
	return out.Attributes
}

// A dead-letter queue declared after its source queue is created first;
// the source's RedrivePolicy points at it and moves a message there once
// it has been received max-receive-count times.
func TestConfigDeadLetterDeclaredAfterSource(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `# orders is declared before its dead-letter queue.
account-id: "123456789012"
region: eu-west-1
queues:
  - name: orders
    attributes:
      VisibilityTimeout: 1
      RedriveAllowPolicy: {redrivePermission: allowAll}
    tags: {team: billing}
    dead-letter:
      queue: orders-dlq
      max-receive-count: 1
  - name: orders-dlq
    attributes:
      MessageRetentionPeriod: 1209600
  - name: events.fifo
`)
	p := startServe(t, cliEnv(t), "--store", "memory", "--config", path)
	// The queues exist before the server accepts requests.
	logs := p.logs.String()
	if ready, serving := strings.LastIndex(logs, "config queue created"), strings.Index(logs, "baton serving"); ready < 0 || ready > serving {
		t.Errorf("want every \"config queue created\" before \"baton serving\":\n%s", logs)
	}
	// They are in the server's region, eu-west-1: a client signing for
	// another region does not see them.
	if out := mustSucceed(t, p.URL, "queue", "list", "--region", "us-east-1"); out != "" {
		t.Errorf("queue list in us-east-1: got %q, want nothing", out)
	}
	c := sqs.New(testutil.NewClient(p.URL).Options(), func(o *sqs.Options) { o.Region = "eu-west-1" })
	base := p.URL + "/123456789012"

	src := getAttrs(t, c, base, "orders")
	var policy struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(src["RedrivePolicy"]), &policy); err != nil {
		t.Fatalf("orders RedrivePolicy %q: %v", src["RedrivePolicy"], err)
	}
	if policy.DeadLetterTargetArn != "arn:aws:sqs:eu-west-1:123456789012:orders-dlq" || policy.MaxReceiveCount != 1 {
		t.Errorf("orders RedrivePolicy: got %+v, want orders-dlq's ARN and 1", policy)
	}
	if src["VisibilityTimeout"] != "1" || !strings.Contains(src["RedriveAllowPolicy"], `"allowAll"`) {
		t.Errorf("orders attributes: got %v", src)
	}
	if a := getAttrs(t, c, base, "orders-dlq"); a["MessageRetentionPeriod"] != "1209600" {
		t.Errorf("orders-dlq MessageRetentionPeriod: got %s, want 1209600", a["MessageRetentionPeriod"])
	}
	if a := getAttrs(t, c, base, "events.fifo"); a["FifoQueue"] != "true" {
		t.Errorf("events.fifo: got %v, want a FIFO queue", a)
	}
	tags, err := c.ListQueueTags(context.Background(), &sqs.ListQueueTagsInput{QueueUrl: aws.String(base + "/orders")})
	if err != nil || tags.Tags["team"] != "billing" {
		t.Errorf("orders tags: got %v, %v", tags, err)
	}

	// The redrive works: a message received once moves on its next receive,
	// once its 1-second lease has lapsed. (VisibilityTimeout 0 would do
	// without the wait, but the engine does not move such a message: it
	// stays in the source queue, never delivered again.)
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(base + "/orders"), MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		if _, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(base + "/orders")}); err != nil {
			return err
		}
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(base + "/orders-dlq")})
		if err != nil {
			return err
		}
		if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "poison" {
			return fmt.Errorf("orders-dlq: got %d messages, want the poison message", len(out.Messages))
		}
		return nil
	})

	// And the CLI sees the declared queues.
	if out := mustSucceed(t, p.URL, "queue", "list", "--region", "eu-west-1"); out != base+"/events.fifo\n"+base+"/orders\n"+base+"/orders-dlq\n" {
		t.Errorf("queue list: got %q", out)
	}
}

// Flags win over BATON_* variables, which win over the file, which wins
// over the defaults; --print-config shows the result with secrets masked,
// and what it prints is itself a valid config file.
func TestConfigPrintPrecedence(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `listen: 127.0.0.1:1111
store: postgres://baton:pg-secret@127.0.0.1:5432/baton
log-level: warn
region: eu-west-1
access-key-id: AKIDFILE
secret-access-key: file-secret-1
credentials:
  - access-key-id: AKIDOTHER
    secret-access-key: file-secret-2
    account-id: "222222222222"
queues:
  - name: jobs
    attributes: {VisibilityTimeout: 60}
    dead-letter: {queue: jobs-dlq, max-receive-count: 4}
  - name: jobs-dlq
`)
	env := cliEnv(t, "BATON_LISTEN=127.0.0.1:2222", "BATON_LOG_LEVEL=error")
	r := runCLI(t, env, nil, "serve", "--config", path, "--listen", "127.0.0.1:3333", "--print-config")
	if r.code != 0 {
		t.Fatalf("--print-config: %v", r)
	}
	if strings.Contains(r.stdout, "file-secret") || strings.Contains(r.stdout, "pg-secret") ||
		!strings.Contains(r.stdout, "secret-access-key: '********'") {
		t.Errorf("--print-config shows a secret or does not mask it:\n%s", r.stdout)
	}
	for _, want := range []string{
		"listen: 127.0.0.1:3333 # from --listen\n",
		"log-level: error # from BATON_LOG_LEVEL\n",
		"region: eu-west-1 # from " + path + ":4\n",
		"store: postgres://baton:xxxxx@127.0.0.1:5432/baton # from " + path + ":2\n",
		`account-id: "000000000000"` + "\n",
		"  - name: jobs # from " + path + ":12\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--print-config: missing %q in\n%s", want, r.stdout)
		}
	}
	var got struct {
		Listen      string `yaml:"listen"`
		Credentials []map[string]string
		Queues      []struct {
			Name       string
			Attributes map[string]string
			DeadLetter struct {
				Queue           string
				MaxReceiveCount int `yaml:"max-receive-count"`
			} `yaml:"dead-letter"`
		}
	}
	if err := yaml.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("--print-config output is not YAML: %v\n%s", err, r.stdout)
	}
	if got.Listen != "127.0.0.1:3333" || len(got.Credentials) != 1 || got.Credentials[0]["account-id"] != "222222222222" ||
		len(got.Queues) != 2 || got.Queues[0].Attributes["VisibilityTimeout"] != "60" || got.Queues[0].DeadLetter.Queue != "jobs-dlq" ||
		got.Queues[0].DeadLetter.MaxReceiveCount != 4 {
		t.Errorf("--print-config parsed: got %+v", got)
	}

	// Without the flag the variable wins; without either, the file.
	r = runCLI(t, env, nil, "serve", "--config", path, "--print-config")
	if !strings.Contains(r.stdout, "listen: 127.0.0.1:2222 # from BATON_LISTEN\n") {
		t.Errorf("BATON_LISTEN over the file: %v", r)
	}
	r = runCLI(t, cliEnv(t, "BATON_CONFIG="+path), nil, "serve", "--print-config")
	if !strings.Contains(r.stdout, "listen: 127.0.0.1:1111 # from "+path+":1\n") {
		t.Errorf("the file (named by BATON_CONFIG) over the default: %v", r)
	}

	// The printed configuration reads back as a config file once its masks
	// are replaced by the secrets. With a mask left in it is refused: read
	// back, it would make a server whose secret is the mask.
	masked := writeConfig(t, r.stdout)
	if r := runCLI(t, cliEnv(t), nil, "serve", "--config", masked, "--print-config"); r.code == 0 ||
		!strings.Contains(r.stderr, "is the mask --print-config writes") {
		t.Errorf("--print-config output with its masks as --config: %v, want refused", r)
	}
	secrets := strings.NewReplacer("'********'", "a-real-secret", "baton:xxxxx@", "baton:pg-secret@").Replace(r.stdout)
	if r := runCLI(t, cliEnv(t), nil, "serve", "--config", writeConfig(t, secrets), "--print-config"); r.code != 0 {
		t.Errorf("--print-config output with the secrets put back, as --config: %v", r)
	}
	// A masked password in the store's URL is refused too, from a flag.
	if r := runCLI(t, cliEnv(t), nil, "serve", "--store", "postgres://u:xxxxx@127.0.0.1/db", "--print-config"); r.code == 0 ||
		!strings.Contains(r.stderr, "--store:") || !strings.Contains(r.stderr, "password mask") {
		t.Errorf("--store with the password mask: %v, want refused", r)
	}
}

// Values from flags and BATON_* variables get the checks a file's get, and
// a password in the store URL's query is masked like one in its user part.
func TestConfigFlagChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--account-id", "12345"}, `--account-id: "12345" is not an account id (12 digits)`},
		{[]string{"BATON_REGION=EU"}, nil, `BATON_REGION: "EU" is not a region name`},
		{nil, []string{"--durability", "bogus"}, "--durability: "},
		{[]string{"BATON_SECRET_ACCESS_KEY=********"}, []string{"--access-key-id", "AKIDX"}, "BATON_SECRET_ACCESS_KEY: "},
		{nil, []string{"--max-long-polls-per-client", "0"}, "--max-long-polls-per-client: 0 would allow no long poll"},
		{nil, []string{"--sns-queue-policies", "strict"}, `--sns-queue-policies: "strict" is not a queue policy mode (off, warn or enforce)`},
		// A port alone gets the loopback address most likely meant.
		{nil, []string{"--listen", "9400"}, `--listen: "9400" is not HOST:PORT: did you mean 127.0.0.1:9400?`},
		{[]string{"BATON_LISTEN=9400"}, nil, `BATON_LISTEN: "9400" is not HOST:PORT: did you mean 127.0.0.1:9400?`},
		{nil, []string{"--listen", "localhost"}, `--listen: "localhost" is not HOST:PORT` + "\n"},
	} {
		args := append([]string{"serve", "--store", "memory", "--print-config"}, tc.args...)
		r := runCLI(t, cliEnv(t, tc.env...), nil, args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v %v: %v, want refused with %q", tc.env, tc.args, r, tc.want)
		}
	}
	r := runCLI(t, cliEnv(t), nil, "serve", "--store", "postgres://u@127.0.0.1:1/db?password=hunter2&sslmode=disable", "--print-config")
	if strings.Contains(r.stdout+r.stderr, "hunter2") || !strings.Contains(r.stdout, "password=xxxxx") {
		t.Errorf("--print-config with a password in the store URL's query: %v", r)
	}
}

// A bad config file is refused, by serve and by --print-config alike, with
// its path, the line and the reason.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want string
	}{
		{"unknown-key", `3: unknown key "lisen" (did you mean listen?); the keys are access-key-id, account-id,`},
		{"unknown-queue-key", `5: queue jobs: unknown key "visibility-timeout"; a queue's keys are name, account-id, region, attributes, tags, dead-letter`},
		{"bad-queue-region", `4: queue jobs: region: "EU West" is not a region name: a region is 1 to 64 lowercase letters, digits and hyphens, like us-east-1`},
		{"bad-log-level", `2: log-level: "loud" is not a log level (debug, info, warn, error)`},
		{"bad-listen", `1: listen: "9324" is not HOST:PORT: did you mean 127.0.0.1:9324?`},
		{"bad-bool", `1: allow-anonymous: "maybe" is not true or false`},
		{"bad-account", `1: account-id: "1234" is not an account id (12 digits)`},
		{"bad-durability", `2: durability: unknown durability "eventually": want full or relaxed`},
		{"bad-sns-queue-policies", `2: sns-queue-policies: "on" is not a queue policy mode (off, warn or enforce)`},
		{"bad-attribute-value", `5: queue jobs: InvalidAttributeValue: Invalid value for the parameter VisibilityTimeout.`},
		{"unknown-attribute", `5: queue jobs: InvalidAttributeName: Unknown Attribute Colour.`},
		{"bad-queue-name", `3: queue no spaces please: InvalidParameterValue`},
		{"dlq-missing", `3: queue orders: the dead-letter queue orders-dlq is not declared in the file (in the same account and region)`},
		{"dlq-cycle", `3: the dead-letter queues form a cycle: a -> b -> c -> a`},
		{"dlq-type-mismatch", `3: queue orders: InvalidParameterValue`},
		{"bad-max-receive-count", `5: queue orders: dead-letter: max-receive-count: "1001" is not a number from 1 to 1000`},
		{"duplicate-queue", `4: queue jobs is declared twice (first at testdata/config/duplicate-queue.yaml:2)`},
		{"duplicate-key", `3: key "region" is given twice (first on line 1)`},
		{"bad-credentials", `5: credentials[1]: the access key id AKIDONE is also listed at testdata/config/bad-credentials.yaml:2`},
		{"syntax-error", `3: did not find expected ',' or '}'`},
		// yaml.v3 names the line where the block mapping began (3, 2)
		// or none (the anchor): the line is the problem's.
		{"syntax-nested-indent", `6: did not find expected key`},
		{"syntax-list-indent", `5: did not find expected key`},
		{"syntax-unknown-anchor", `3: unknown anchor 'nope' referenced`},
		{"syntax-tab", `2: found a tab character that violates indentation`},
		{"syntax-open-quote", `5: found unexpected end of stream`},
		{"syntax-nested-flow", `4: did not find expected ',' or ']'`},
		{"not-a-mapping", `1: want a mapping of settings (key: value), got a list`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := "testdata/config/" + tc.file + ".yaml"
			want := "baton: " + path + ":" + tc.want
			for _, extra := range [][]string{nil, {"--print-config"}} {
				args := append([]string{"serve", "--store", "memory", "--listen", "127.0.0.1:0", "--config", path}, extra...)
				r := runCLI(t, cliEnv(t), nil, args...)
				// The error is the last line; no queue is created before
				// the whole file is checked.
				lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
				if r.code != 1 || !strings.HasPrefix(lines[len(lines)-1], want) || r.stdout != "" || strings.Contains(r.stderr, "config queue") {
					t.Errorf("baton %s: %v\nwant exit 1, no queue created and the last line of stderr starting %q", strings.Join(args, " "), r, want)
				}
			}
		})
	}
}

// On a durable store the queues survive a restart; a changed file updates
// the attributes and tags of the queues it declares.
func TestConfigRestartUpdatesQueues(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	path := writeConfig(t, "queues:\n  - name: jobs\n    attributes: {VisibilityTimeout: 30}\n")
	p := startServe(t, cliEnv(t), "--store", "sqlite", "--data-dir", data, "--config", path)
	c := testutil.NewClient(p.URL)
	base := p.URL + "/000000000000"
	if a := getAttrs(t, c, base, "jobs"); a["VisibilityTimeout"] != "30" {
		t.Fatalf("first start: VisibilityTimeout %s, want 30", a["VisibilityTimeout"])
	}
	p.stop(t)

	if err := os.WriteFile(path, []byte("queues:\n  - name: jobs\n    attributes: {VisibilityTimeout: 90}\n    tags: {env: prod}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, cliEnv(t), "--store", "sqlite", "--data-dir", data, "--config", path)
	c = testutil.NewClient(p.URL)
	base = p.URL + "/000000000000"
	if a := getAttrs(t, c, base, "jobs"); a["VisibilityTimeout"] != "90" {
		t.Errorf("after the restart: VisibilityTimeout %s, want 90", a["VisibilityTimeout"])
	}
	tags, err := c.ListQueueTags(context.Background(), &sqs.ListQueueTagsInput{QueueUrl: aws.String(base + "/jobs")})
	if err != nil || tags.Tags["env"] != "prod" {
		t.Errorf("after the restart: tags %v, %v, want env=prod", tags, err)
	}
	if !strings.Contains(p.logs.String(), `config queue updated" queue=jobs`) {
		t.Errorf("want the queue logged as updated:\n%s", p.logs)
	}
	p.stop(t)

	// The same file again: the queue is as declared, and says so.
	p = startServe(t, cliEnv(t), "--store", "sqlite", "--data-dir", data, "--config", path)
	if logs := p.logs.String(); !strings.Contains(logs, `config queue exists" queue=jobs`) {
		t.Errorf("third start, the file unchanged: want the queue logged as existing:\n%s", logs)
	}
}

// A config file refused for its third queue creates neither of the first
// two in a durable store: every queue is checked before any is created.
func TestConfigRefusedCreatesNothing(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	path := writeConfig(t, `queues:
  - name: first
  - name: second
    attributes: {VisibilityTimeout: 60}
  - name: third
    attributes: {VisibilityTimeout: 50000}
`)
	r := runCLI(t, cliEnv(t), nil, "serve", "--store", "sqlite", "--data-dir", data, "--listen", "127.0.0.1:0", "--config", path)
	if want := path + ":6: queue third: InvalidAttributeValue"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("serve with a bad third queue: %v\nwant exit 1 and %q", r, want)
	}
	p := startServe(t, cliEnv(t), "--store", "sqlite", "--data-dir", data)
	if out := mustSucceed(t, p.URL, "queue", "list"); out != "" {
		t.Errorf("queues after the refused file: %q, want none", out)
	}
}

// A queue declared without attributes whose tags change between runs is
// re-tagged: CreateQueue refuses the new tags for the existing queue
// (QueueNameExists), and there are no attributes to set.
func TestConfigRestartRetagsQueue(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	path := writeConfig(t, "queues:\n  - name: plain\n    tags: {env: dev}\n")
	p := startServe(t, cliEnv(t), "--store", "sqlite", "--data-dir", data, "--config", path)
	p.stop(t)
	if err := os.WriteFile(path, []byte("queues:\n  - name: plain\n    tags: {env: prod}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, cliEnv(t), "--store", "sqlite", "--data-dir", data, "--config", path)
	c := testutil.NewClient(p.URL)
	tags, err := c.ListQueueTags(context.Background(), &sqs.ListQueueTagsInput{QueueUrl: aws.String(p.URL + "/000000000000/plain")})
	if err != nil || tags.Tags["env"] != "prod" {
		t.Errorf("after the restart: tags %v, %v, want env=prod", tags, err)
	}
}

// --print-config checks the credentials as serve would: a credentials file
// serve refuses is refused, with serve's file:line reason, not printed as
// if all were well.
func TestConfigPrintChecksCredentials(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(bad, []byte("AKIDONLYTWO secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, cliEnv(t), nil, "serve", "--credentials-file", bad, "--print-config")
	if r.code != 1 || !strings.Contains(r.stderr, bad+":1: want 3 fields") {
		t.Errorf("--print-config with a bad credentials file: %v\nwant exit 1 naming %s:1", r, bad)
	}
}

// A declared queue is in the server's region unless it names its own; one
// name may be declared once per region, and a dead-letter queue is the one
// of that name in its source's region.
func TestConfigQueueRegions(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `queues:
  - name: jobs
    attributes: {VisibilityTimeout: 30}
  - name: jobs
    region: eu-central-1
    attributes: {VisibilityTimeout: 60}
    dead-letter: {queue: jobs-dlq, max-receive-count: 3}
  - name: jobs-dlq
    region: eu-central-1
`)
	p := startServe(t, cliEnv(t), "--store", "memory", "--config", path)
	base := p.URL + "/000000000000"
	us := testutil.NewClient(p.URL)
	eu := sqs.New(us.Options(), func(o *sqs.Options) { o.Region = "eu-central-1" })
	if a := getAttrs(t, us, base, "jobs"); a["VisibilityTimeout"] != "30" || a["RedrivePolicy"] != "" {
		t.Errorf("us-east-1 jobs: %v; want VisibilityTimeout 30 and no RedrivePolicy", a)
	}
	a := getAttrs(t, eu, base, "jobs")
	if a["VisibilityTimeout"] != "60" || !strings.Contains(a["RedrivePolicy"], `"arn:aws:sqs:eu-central-1:000000000000:jobs-dlq"`) {
		t.Errorf("eu-central-1 jobs: %v; want VisibilityTimeout 60 and eu-central-1's jobs-dlq", a)
	}
	if out := mustSucceed(t, p.URL, "queue", "list"); out != base+"/jobs\n" {
		t.Errorf("queue list in us-east-1: got %q", out)
	}
	if out := mustSucceed(t, p.URL, "queue", "list", "--region", "eu-central-1"); out != base+"/jobs\n"+base+"/jobs-dlq\n" {
		t.Errorf("queue list in eu-central-1: got %q", out)
	}
}

// Topics declared in the file are created at start with their
// subscriptions, before the server accepts requests, and are durable; a
// restart with a changed file updates them, and with the same file says
// they exist.
func TestConfigTopics(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	path := writeConfig(t, `queues:
  - name: audit
  - name: billing
topics:
  - name: orders
    attributes: {DisplayName: Orders}
    tags: {team: billing}
    subscriptions:
      - queue: billing
        raw: true
      - queue: audit
  - name: refunds
`)
	p := startServe(t, cliEnv(t), "--store", "embedded", "--data-dir", data, "--config", path)
	logs := p.logs.String()
	for _, line := range []string{`config topic created" topic=orders `, `config topic created" topic=refunds`,
		`config subscription created" topic=orders queue=billing`, `config subscription created" topic=orders queue=audit`} {
		if at, serving := strings.Index(logs, line), strings.Index(logs, "baton serving"); at < 0 || at > serving {
			t.Errorf("want %q before \"baton serving\":\n%s", line, logs)
		}
	}
	topic := "arn:aws:sns:us-east-1:000000000000:orders"
	mustSucceed(t, p.URL, "publish", "orders", "paid")
	c := testutil.NewClient(p.URL)
	base := p.URL + "/000000000000/"
	if b := receiveBodyAt(t, c, base+"billing"); b != "paid" {
		t.Errorf("billing (raw) got %q, want paid", b)
	}
	if b := receiveBodyAt(t, c, base+"audit"); !strings.Contains(b, `"TopicArn" : "`+topic+`"`) {
		t.Errorf("audit (enveloped) got %q, want the envelope of %s", b, topic)
	}
	p.stop(t)

	// The file now wants audit raw too and another display name.
	changed := strings.Replace(strings.Replace(string(must(os.ReadFile(path))), "      - queue: audit\n", "      - {queue: audit, raw: true}\n", 1),
		"DisplayName: Orders", "DisplayName: Sales", 1)
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, cliEnv(t), "--store", "embedded", "--data-dir", data, "--config", path)
	logs = p.logs.String()
	for _, line := range []string{`config topic updated" topic=orders `, `config topic exists" topic=refunds`,
		`config subscription exists" topic=orders queue=billing`, `config subscription updated" topic=orders queue=audit`} {
		if !strings.Contains(logs, line) {
			t.Errorf("second start: want %q:\n%s", line, logs)
		}
	}
	if got := mustSucceed(t, p.URL, "topic", "list"); got != topic+"\n"+strings.Replace(topic, "orders", "refunds", 1)+"\n" {
		t.Errorf("topic list after the restart: %q", got)
	}
	mustSucceed(t, p.URL, "publish", "orders", "shipped")
	if b := receiveBodyAt(t, c2(p.URL), p.URL+"/000000000000/audit"); b != "shipped" {
		t.Errorf("audit, now raw, got %q, want shipped", b)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func c2(url string) *sqs.Client { return testutil.NewClient(url) }

// receiveBodyAt receives the one message the queue at url holds.
func receiveBodyAt(t *testing.T, c *sqs.Client, url string) string {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive %s: %v, %v; want one message", url, out, err)
	}
	return aws.ToString(out.Messages[0].Body)
}

// A topic the API refuses, or a subscription without a queue, fails the
// start with the file:line of its declaration, and nothing is created.
func TestConfigTopicErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ file, want string }{
		{"topics:\n  - name: ok\n  - name: not ok\n", ":3: topic not ok: InvalidParameter"},
		{"topics:\n  - name: t\n    subscriptions:\n      - raw: true\n", ":4: topic t: subscriptions[0]: no queue"},
		{"topics:\n  - name: t\n    subscriptions:\n      - queue: q\n        raw: maybe\n", ":5: topic t: subscriptions[0]: raw: want true or false"},
		{"topics:\n  - name: t\n    colour: red\n", `:3: topic t: unknown key "colour"; a topic's keys are name,`},
		{"topics:\n  - name: t\n    subscription: []\n", `:3: topic t: unknown key "subscription" (did you mean subscriptions?); a topic's keys are name,`},
		{"topics:\n  - name: t\n  - name: t\n", ":3: topic t is declared twice (first at"},
	} {
		data := t.TempDir()
		path := writeConfig(t, tt.file)
		r := runCLI(t, cliEnv(t), nil, "serve", "--store", "embedded", "--data-dir", data, "--listen", "127.0.0.1:0", "--config", path)
		if r.code != 1 || !strings.Contains(r.stderr, path+tt.want) {
			t.Errorf("serve with\n%s: %v\nwant exit 1 and %q", tt.file, r, path+tt.want)
		}
	}
	data := t.TempDir()
	path := writeConfig(t, "topics:\n  - name: ok\n  - name: not ok\n")
	runCLI(t, cliEnv(t), nil, "serve", "--store", "embedded", "--data-dir", data, "--listen", "127.0.0.1:0", "--config", path)
	p := startServe(t, cliEnv(t), "--store", "embedded", "--data-dir", data)
	if out := mustSucceed(t, p.URL, "topic", "list"); out != "" {
		t.Errorf("topics after the refused file: %q, want none", out)
	}
}
