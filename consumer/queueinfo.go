package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueInfo is what the runtime reads about its queue at start.
type QueueInfo struct {
	// URL is the queue URL the consumer was given.
	URL string
	// Name is the last element of the URL.
	Name string
	// ARN is the QueueArn attribute.
	ARN string
	// FIFO is true for FIFO queues.
	FIFO bool
	// VisibilityTimeout is the queue's default lease length.
	VisibilityTimeout time.Duration
	// Retention is MessageRetentionPeriod.
	Retention time.Duration
	// MaxReceiveCount is the RedrivePolicy's maxReceiveCount; 0 when the
	// queue has no redrive policy.
	MaxReceiveCount int
	// DeadLetterARN is the RedrivePolicy's deadLetterTargetArn.
	DeadLetterARN string
	// DeadLetterURL is the dead-letter queue's URL, resolved from its ARN
	// (or given by WithDeadLetterQueue); empty if unknown.
	DeadLetterURL string
	// Attributes are all the attributes GetQueueAttributes returned.
	Attributes map[string]string
}

// loadQueueInfo reads the queue's attributes and resolves its dead-letter
// queue. A dead-letter queue that cannot be found is not an error here (the
// Doctor reports it); a queue that cannot be read is.
func loadQueueInfo(ctx context.Context, c Client, url string) (QueueInfo, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return QueueInfo{}, fmt.Errorf("read attributes of %s: %w", url, err)
	}
	qi := QueueInfo{URL: url, Name: queueName(url), Attributes: out.Attributes}
	a := out.Attributes
	qi.ARN = a["QueueArn"]
	qi.FIFO = a["FifoQueue"] == "true" || strings.HasSuffix(qi.Name, ".fifo")
	qi.VisibilityTimeout = secondsAttr(a["VisibilityTimeout"], 30)
	qi.Retention = secondsAttr(a["MessageRetentionPeriod"], 345600)
	if rp := a["RedrivePolicy"]; rp != "" {
		n, arn, err := ParseRedrivePolicy(rp)
		if err != nil {
			return QueueInfo{}, err
		}
		qi.MaxReceiveCount, qi.DeadLetterARN = n, arn
		if account, name, ok := parseQueueARN(arn); ok {
			u, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name, QueueOwnerAWSAccountId: &account})
			if err == nil && u.QueueUrl != nil {
				qi.DeadLetterURL = *u.QueueUrl
			}
		}
	}
	return qi, nil
}

// ParseRedrivePolicy reads a RedrivePolicy attribute:
// {"deadLetterTargetArn":"arn:…","maxReceiveCount":N}, where N may be a
// number or a numeric string, as SQS accepts both.
func ParseRedrivePolicy(s string) (maxReceiveCount int, deadLetterARN string, err error) {
	var rp struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(s), &rp); err != nil {
		return 0, "", fmt.Errorf("parse RedrivePolicy %q: %w", s, err)
	}
	raw := strings.Trim(string(rp.MaxReceiveCount), `"`)
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, "", fmt.Errorf("parse RedrivePolicy %q: bad maxReceiveCount %q", s, raw)
	}
	return n, rp.DeadLetterTargetArn, nil
}

// parseQueueARN splits arn:aws:sqs:region:account:name.
func parseQueueARN(arn string) (account, name string, ok bool) {
	p := strings.Split(arn, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" || p[5] == "" {
		return "", "", false
	}
	return p[4], p[5], true
}

// queueName is the last path element of a queue URL.
func queueName(url string) string {
	url = strings.TrimRight(url, "/")
	if i := strings.LastIndexByte(url, '/'); i >= 0 {
		return url[i+1:]
	}
	return url
}

func secondsAttr(v string, def int) time.Duration {
	n, err := strconv.Atoi(v)
	if err != nil {
		n = def
	}
	return time.Duration(n) * time.Second
}
