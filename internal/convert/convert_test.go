package convert

import (
	"reflect"
	"strings"
	"testing"
)

func TestHOCON(t *testing.T) {
	root, err := parseHOCON(`include classpath("application.conf")
# comment
a.b = 1, a.c : "two // not a comment"
a { d = 3 seconds // comment
}
"x.y" { z = [1, 2] }
e = plain words # trailing
a.b = 9
`)
	if err != nil {
		t.Fatal(err)
	}
	a := root.get("a").(*hObject)
	for key, want := range map[string]string{"b": "9", "c": "two // not a comment", "d": "3 seconds"} {
		if got := a.get(key).(hScalar).text; got != want {
			t.Errorf("a.%s = %q, want %q", key, got, want)
		}
	}
	if got := strings.Join(a.keys, ","); got != "b,c,d" {
		t.Errorf("a's keys %s, want b,c,d (objects given twice merge)", got)
	}
	if arr := root.get("x.y").(*hObject).get("z").(hArray); len(arr.items) != 2 {
		t.Errorf("a quoted key with a dot is one key: %+v", root.get("x.y"))
	}
	if got := root.get("e").(hScalar).text; got != "plain words" {
		t.Errorf("e = %q", got)
	}
	for text, want := range map[string]string{
		"a = ${HOME}":     "line 1: substitutions",
		"a {\n b = 1\n":   "closing brace is missing",
		"a = \"open\nb=1": "line 1: a quoted string runs past",
		"a b":             "want =, : or {",
	} {
		if _, err := parseHOCON(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", text, err, want)
		}
	}
}

func TestHOCONSeconds(t *testing.T) {
	for text, want := range map[string]int64{"10 seconds": 10, "10s": 10, "1 second": 1, "2 minutes": 120, "1h": 3600, "5000 ms": 5, "0 seconds": 0, "1.5 minutes": 90} {
		if got, err := hoconSeconds(text); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", text, got, err, want)
		}
	}
	for _, text := range []string{"10", "500 ms", "ten seconds", "3 fortnights"} {
		if got, err := hoconSeconds(text); err == nil {
			t.Errorf("%q: %d, want an error", text, got)
		}
	}
}

func TestElasticMQErrorsNameTheLine(t *testing.T) {
	for text, want := range map[string]string{
		"queues {\n q {\n  deadLettersQueue { name = d }\n }\n}": "elasticmq.conf:3: queues.q.deadLettersQueue: needs both",
		"queues {\n q {\n  delay = 2 weeks\n }\n}":               "elasticmq.conf:3: queues.q.delay",
		"queues {\n q {\n  fifo = yes\n }\n}":                    "want true or false",
		"queues = [1]":                                           "queues: want an object",
	} {
		if _, err := ElasticMQ(text, "elasticmq.conf"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

func TestGoaws(t *testing.T) {
	c, err := Goaws(`Dev:
  Host: goaws
  Port: "4200"
  QueueAttributeDefaults:
    VisibilityTimeout: 7
  Queues:
    - Name: jobs
      VisibilityTimeout: 0
      RedrivePolicy: '{"maxReceiveCount": "4", "deadLetterTargetArn": "arn:aws:sqs:local:queue:jobs-dlq"}'
    - Name: jobs-dlq
  Topics:
    - Name: events
      Subscriptions:
        - QueueName: jobs
          Raw: true
          FilterPolicy: '{"kind":["paid"]}'
        - QueueName: audit
        - Protocol: http
          EndPoint: http://hooks:8080/events
    - Name: quiet
`, "goaws.yaml", "Dev")
	if err != nil {
		t.Fatal(err)
	}
	q := c.Queues[0]
	if c.Listen != "127.0.0.1:4200" || q.DeadLetter != "jobs-dlq" || q.MaxReceiveCount != 4 || len(q.Attributes) != 1 || q.Attributes[0] != (Pair{"VisibilityTimeout", "7"}) {
		t.Errorf("converted %+v", c)
	}
	notes := strings.Join(c.Notes, "\n")
	if !strings.Contains(notes, "/queue/NAME") {
		t.Errorf("no note on goaws's queue URLs without AccountId: %v", c.Notes)
	}
	// goaws listened on every interface and named its Host in queue URLs;
	// Baton does neither unless told, and says so.
	for _, want := range []string{
		"goaws listened on 0.0.0.0:4200, every interface; Baton listens on 127.0.0.1 unless told otherwise: beyond loopback (a container: listen 0.0.0.0:4200) it needs credentials or --allow-anonymous",
		"Host goaws: goaws named it in every queue URL; Baton's queue URLs name the host each client called (set advertise-url: http://goaws:4200 to hand out goaws's)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q: want %q", notes, want)
		}
	}
	// Topics and their queue subscriptions are declared; a subscribed
	// queue the file does not list is created; an HTTP endpoint's
	// subscription is a note with the command that makes it.
	wantTopics := []Topic{
		{Name: "events", Subscriptions: []Subscription{{Queue: "jobs", Raw: true, FilterPolicy: `{"kind":["paid"]}`}, {Queue: "audit"}}},
		{Name: "quiet"},
	}
	if !reflect.DeepEqual(c.Topics, wantTopics) {
		t.Errorf("topics %+v, want %+v", c.Topics, wantTopics)
	}
	if c.queue("audit") == nil {
		t.Errorf("the subscribed queue audit is not declared: %+v", c.Queues)
	}
	if !strings.Contains(notes, "sns subscribe --topic-arn arn:aws:sns:us-east-1:000000000000:events --protocol http --notification-endpoint http://hooks:8080/events") || strings.Contains(notes, "create-topic") {
		t.Errorf("notes %q: want the HTTP subscription's command alone", notes)
	}
	yml, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	wantYAML := `topics:
  - name: events
    subscriptions:
      - queue: jobs
        raw: true
        attributes:
          FilterPolicy: '{"kind":["paid"]}'
      - queue: audit
  - name: quiet
`
	if !strings.HasSuffix(string(yml), wantYAML) {
		t.Errorf("YAML ends\n%s\nwant it to end\n%s", yml, wantYAML)
	}
	if _, err := Goaws("Local:\n  Port: 4100\n", "goaws.yaml", "Prod"); err == nil || !strings.Contains(err.Error(), `no environment "Prod"; it has Local`) {
		t.Errorf("unknown environment: %v", err)
	}
}
