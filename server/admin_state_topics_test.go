package server_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// TestAdminStateTopics, on every store: an export carries the account's
// topics of every region with their attributes, tags and subscriptions; a
// reset deletes them; an import brings them back, subscriptions working,
// and refuses a topic that exists.
func TestAdminStateTopics(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testAdminStateTopics)
}

func testAdminStateTopics(t *testing.T, srv *testutil.Server) {
	c := srv.SNSClient()
	srv.MustCreateQueue(t, "fanned", nil)
	out, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("orders"), Attributes: map[string]string{"DisplayName": "Orders"},
		Tags: []snstypes.Tag{{Key: aws.String("team"), Value: aws.String("billing")}}})
	if err != nil {
		t.Fatal(err)
	}
	topic := *out.TopicArn
	mustSubscribe(t, c, topic, snsQueueARN("fanned"), map[string]string{"RawMessageDelivery": "true"})
	mustCreateTopic(t, c, "bare")
	// A topic of another region, through a client signing for it.
	eu := awssns.New(c.Options(), func(o *awssns.Options) { o.Region = "eu-west-1" })
	if _, err := eu.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("abroad")}); err != nil {
		t.Fatal(err)
	}

	first, raw := export(t, srv)
	var names []string
	for _, tp := range first.Topics {
		names = append(names, tp.Region+"/"+tp.Name)
	}
	if want := []string{"eu-west-1/abroad", "us-east-1/bare", "us-east-1/orders"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("exported topics %v, want %v:\n%s", names, want, raw)
	}
	orders := first.Topics[2]
	want := server.TopicStateJSON{Region: "us-east-1", Name: "orders", Attributes: map[string]string{"DisplayName": "Orders"},
		Tags: map[string]string{"team": "billing"}, Subscriptions: []server.SubscriptionStateJSON{
			{Protocol: "sqs", Endpoint: snsQueueARN("fanned"), Attributes: map[string]string{"RawMessageDelivery": "true"}}}}
	if !reflect.DeepEqual(orders, want) {
		t.Errorf("exported orders = %+v, want %+v", orders, want)
	}

	code, _, body := fetch(t, "POST", srv.URL+"/admin/api/reset", jsonHeader, "{}")
	if code != http.StatusOK || !strings.Contains(body, `"deleted_topics": 3`) {
		t.Fatalf("reset: %d %s", code, body)
	}
	if after, _ := export(t, srv); len(after.Topics) != 0 {
		t.Fatalf("topics after the reset: %+v, want none", after.Topics)
	}

	code, _, body = fetch(t, "POST", srv.URL+"/admin/api/import", jsonHeader, raw)
	if code != http.StatusOK || !strings.Contains(body, `"topics": 3`) {
		t.Fatalf("import: %d %s", code, body)
	}
	if loaded, _ := export(t, srv); !reflect.DeepEqual(loaded.Topics, first.Topics) {
		t.Errorf("loaded topics %+v, want %+v", loaded.Topics, first.Topics)
	}
	// The imported subscription delivers.
	q := srv.URL + "/" + testutil.Account + "/fanned"
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("again")}); err != nil {
		t.Fatal(err)
	}
	if m := receiveCopy(t, srv.Client, q); *m.Body != "again" {
		t.Errorf("the imported raw subscription delivered %q, want again", *m.Body)
	}
	// A file whose topic exists is refused, changing nothing.
	file := `{"format":1,"queues":[{"name":"new-queue","messages":[]}],"topics":[{"name":"bare","subscriptions":[]}]}`
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/import", jsonHeader, file); code != http.StatusBadRequest || !strings.Contains(body, "topic already exists: bare") {
		t.Errorf("import of an existing topic: %d %s, want 400 topic already exists", code, body)
	}
	if st, _ := export(t, srv); len(st.Queues) != 1 {
		t.Errorf("after the refused import: queues %+v, want only fanned", st.Queues)
	}
}
