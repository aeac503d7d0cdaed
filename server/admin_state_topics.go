package server

import (
	"context"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/sns"
)

// TopicStateJSON is one exported SNS topic: its settable attributes, tags
// and subscriptions.
type TopicStateJSON struct {
	Region        string                  `json:"region,omitempty"`
	Name          string                  `json:"name"`
	Attributes    map[string]string       `json:"attributes,omitempty"`
	Tags          map[string]string       `json:"tags,omitempty"`
	Subscriptions []SubscriptionStateJSON `json:"subscriptions"`
}

// SubscriptionStateJSON is one subscription of an exported topic.
type SubscriptionStateJSON struct {
	Protocol   string            `json:"protocol"`
	Endpoint   string            `json:"endpoint"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// resetTopics deletes the account's topics of region (every region if
// empty), if the server serves SNS, and returns how many.
func resetTopics(ctx context.Context, svc *sns.Service, account, region string) (int, error) {
	if svc == nil {
		return 0, nil
	}
	return svc.Reset(ctx, account, region)
}

// exportTopics is the account's topics of region as an export carries
// them; none without SNS.
func exportTopics(ctx context.Context, svc *sns.Service, account, region string) ([]TopicStateJSON, error) {
	if svc == nil {
		return nil, nil
	}
	ts, err := svc.ExportTopics(ctx, account, region)
	if err != nil {
		return nil, err
	}
	var out []TopicStateJSON
	for _, t := range ts {
		tj := TopicStateJSON{Region: t.Region, Name: t.Name, Attributes: t.Attributes, Tags: t.Tags, Subscriptions: []SubscriptionStateJSON{}}
		for _, s := range t.Subscriptions {
			tj.Subscriptions = append(tj.Subscriptions, SubscriptionStateJSON(s))
		}
		out = append(out, tj)
	}
	return out, nil
}

// errNoSNS refuses an import of topics into a server that serves no SNS.
var errNoSNS = baton.Errorf(baton.ErrInvalidParameterValue, "the file has SNS topics, and this server's store keeps none")

// checkTopicImport turns the file's topics into the service's, refusing
// them if one exists or the server serves no SNS.
func checkTopicImport(ctx context.Context, svc *sns.Service, account string, in []TopicStateJSON) ([]sns.TopicState, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if svc == nil {
		return nil, errNoSNS
	}
	ts := make([]sns.TopicState, 0, len(in))
	for _, t := range in {
		st := sns.TopicState{Region: t.Region, Name: t.Name, Attributes: t.Attributes, Tags: t.Tags}
		for _, s := range t.Subscriptions {
			st.Subscriptions = append(st.Subscriptions, sns.SubscriptionState(s))
		}
		ts = append(ts, st)
	}
	return ts, svc.CheckImport(ctx, account, ts)
}
