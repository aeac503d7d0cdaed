package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

func snsTag(k, v string) snstypes.Tag { return snstypes.Tag{Key: aws.String(k), Value: aws.String(v)} }

// TestSNSTags pins TagResource, UntagResource and ListTagsForResource: a
// key given again replaces its value, an absent key untags as no error,
// an empty list is an empty <Tags/>, a key twice in one call and a 51st
// tag are refused as AWS refuses them, and a missing topic is
// ResourceNotFound (404).
func TestSNSTags(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	arn := mustCreateTopic(t, c, "tagged")
	list := func() map[string]string {
		t.Helper()
		out, err := c.ListTagsForResource(ctx, &awssns.ListTagsForResourceInput{ResourceArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Tags == nil {
			t.Fatal("Tags is nil: the response had no <Tags> element")
		}
		m := map[string]string{}
		for _, tg := range out.Tags {
			m[*tg.Key] = *tg.Value
		}
		return m
	}
	if got := list(); len(got) != 0 {
		t.Errorf("tags of a new topic: %v", got)
	}
	if _, err := c.TagResource(ctx, &awssns.TagResourceInput{ResourceArn: aws.String(arn),
		Tags: []snstypes.Tag{snsTag("team", "a"), snsTag("env", "dev")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TagResource(ctx, &awssns.TagResourceInput{ResourceArn: aws.String(arn), Tags: []snstypes.Tag{snsTag("team", "b")}}); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 2 || got["team"] != "b" || got["env"] != "dev" {
		t.Errorf("tags = %v, want team=b env=dev", got)
	}
	if _, err := c.UntagResource(ctx, &awssns.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: []string{"env", "absent"}}); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 1 || got["team"] != "b" {
		t.Errorf("tags after untag = %v, want team=b", got)
	}
	_, err := c.TagResource(ctx, &awssns.TagResourceInput{ResourceArn: aws.String(arn), Tags: []snstypes.Tag{snsTag("k", "1"), snsTag("k", "2")}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Duplicated keys are not allowed.")
	var many []snstypes.Tag
	for i := range 50 {
		many = append(many, snsTag(fmt.Sprintf("k%02d", i), "v"))
	}
	_, err = c.TagResource(ctx, &awssns.TagResourceInput{ResourceArn: aws.String(arn), Tags: many})
	wantSNSError(t, err, "TagLimitExceeded", 400, "Could not complete request: tag quota of per resource exceeded")
	_, err = c.ListTagsForResource(ctx, &awssns.ListTagsForResourceInput{ResourceArn: aws.String(topicARN("none"))})
	wantAPIError(t, err, "ResourceNotFound", 404)
	_, err = c.TagResource(ctx, &awssns.TagResourceInput{ResourceArn: aws.String(topicARN("none")), Tags: []snstypes.Tag{snsTag("a", "b")}})
	wantAPIError(t, err, "ResourceNotFound", 404)
}
