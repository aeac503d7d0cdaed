package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"
)

// topicCommand is `baton topic`: create, list and delete SNS topics on a
// running server, subscribe queues to them, and list their subscriptions
// and deliveries.
func topicCommand() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list and delete SNS topics; subscribe queues to them; list their subscriptions and deliveries",
		Long: "Manage the SNS topics of a running Baton (see docs/sns.md). TOPIC is a topic name or ARN;\n" +
			"QUEUE a queue name, URL or ARN. Credentials, region and endpoint are found as for `baton queue`.\n" +
			"`baton publish` publishes to a topic.",
	}
	groupOnly(cmd)
	o.register(cmd.PersistentFlags())
	o.registerTimeout(cmd.PersistentFlags(), answerTimeout)
	cmd.AddCommand(topicCreateCommand(&o), topicListCommand(&o), topicDeleteCommand(&o),
		topicSubscribeCommand(&o), topicSubscriptionsCommand(&o), topicDeliveriesCommand(&o))
	return cmd
}

// snsClient is client's SNS counterpart, for the same server.
func (o *clientOptions) snsClient(cmd *cobra.Command) (*awssns.Client, error) {
	cfg, err := o.awsConfig(cmd)
	if err != nil {
		return nil, err
	}
	endpoint := o.resolvedEndpoint(cmd)
	return awssns.NewFromConfig(cfg, func(so *awssns.Options) { so.BaseEndpoint = aws.String(endpoint) }), nil
}

// topicARN turns a topic argument into its ARN: an ARN is one already; a
// name is looked up in ListTopics.
func topicARN(ctx context.Context, c *awssns.Client, topic string) (string, error) {
	if strings.HasPrefix(topic, "arn:") {
		return topic, nil
	}
	pages := awssns.NewListTopicsPaginator(c, &awssns.ListTopicsInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return "", namedError("topic", topic, err)
		}
		for _, t := range page.Topics {
			if arn := aws.ToString(t.TopicArn); strings.HasSuffix(arn, ":"+topic) {
				return arn, nil
			}
		}
	}
	return "", fmt.Errorf("topic %s: NotFound: no topic of that name (`baton topic list` lists them)", topic)
}

// topicClient is snsClient for a command acting on topic, a name or an
// ARN, with the topic's ARN (topicARN).
func (o *clientOptions) topicClient(cmd *cobra.Command, topic string) (*awssns.Client, string, error) {
	c, err := o.snsClient(cmd)
	return resolveArg(cmd, c, err, topicARN, topic)
}

func topicCreateCommand(o *clientOptions) *cobra.Command {
	var attrs, tags []string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic and print its ARN",
		Long: "Create a topic and print its ARN. A name ending in .fifo makes a FIFO topic (FifoTopic=true\n" +
			"is implied). Creating a topic that exists with the same attributes prints its ARN again.",
		Example: "  baton topic create orders\n  baton topic create orders -a DisplayName=Orders -t team=billing",
		Args:    nameThenFlags,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, t, err := createPairs(args[0], "FifoTopic", attrs, tags)
			if err != nil {
				return err
			}
			c, err := o.snsClient(cmd)
			if err != nil {
				return err
			}
			in := &awssns.CreateTopicInput{Name: aws.String(args[0]), Attributes: a}
			for k, v := range t {
				in.Tags = append(in.Tags, snstypes.Tag{Key: aws.String(k), Value: aws.String(v)})
			}
			out, err := c.CreateTopic(cmd.Context(), in)
			if err != nil {
				return namedError("topic", args[0], err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), aws.ToString(out.TopicArn))
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&attrs, "attribute", "a", nil, "topic attribute NAME=VALUE (repeatable), e.g. DisplayName=Orders")
	cmd.Flags().StringArrayVarP(&tags, "tag", "t", nil, "tag KEY=VALUE (repeatable)")
	return cmd
}

func topicListCommand(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Print the ARN of every topic, one a line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.snsClient(cmd)
			if err != nil {
				return err
			}
			pages := awssns.NewListTopicsPaginator(c, &awssns.ListTopicsInput{})
			for pages.HasMorePages() {
				page, err := pages.NextPage(cmd.Context())
				if err != nil {
					return apiError(err)
				}
				for _, t := range page.Topics {
					fmt.Fprintln(cmd.OutOrStdout(), aws.ToString(t.TopicArn))
				}
			}
			return nil
		},
	}
}

func topicDeleteCommand(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete TOPIC",
		Short: "Delete a topic and its subscriptions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, arn, err := o.topicClient(cmd, args[0])
			if err != nil {
				return err
			}
			if _, err := c.DeleteTopic(cmd.Context(), &awssns.DeleteTopicInput{TopicArn: aws.String(arn)}); err != nil {
				return namedError("topic", args[0], err)
			}
			return nil
		},
	}
}

func topicSubscribeCommand(o *clientOptions) *cobra.Command {
	var (
		attrs []string
		raw   bool
	)
	cmd := &cobra.Command{
		Use:   "subscribe TOPIC QUEUE",
		Short: "Subscribe a queue to a topic and print the subscription's ARN",
		Long: "Subscribe a queue to a topic, so that every message published to the topic gets a copy in the\n" +
			"queue, and print the subscription's ARN. The copy is the SNS envelope (JSON), or with --raw the\n" +
			"message itself. Subscribing a queue again with the same attributes prints the same ARN.",
		Example: "  baton topic subscribe orders billing --raw\n" +
			"  baton topic subscribe orders audit -a 'FilterPolicy={\"kind\": [\"refund\"]}'",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := parsePairs("--attribute", attrs)
			if err != nil {
				return err
			}
			if raw {
				if a == nil {
					a = map[string]string{}
				}
				a["RawMessageDelivery"] = "true"
			}
			queue, err := queueARN(cmd, o, args[1])
			if err != nil {
				return err
			}
			c, topic, err := o.topicClient(cmd, args[0])
			if err != nil {
				return err
			}
			out, err := c.Subscribe(cmd.Context(), &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
				Endpoint: aws.String(queue), Attributes: a, ReturnSubscriptionArn: true})
			if err != nil {
				return namedError("topic", args[0], err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), aws.ToString(out.SubscriptionArn))
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&attrs, "attribute", "a", nil, "subscription attribute NAME=VALUE (repeatable), e.g. FilterPolicy={...}")
	cmd.Flags().BoolVar(&raw, "raw", false, "deliver the message itself, not the SNS envelope (RawMessageDelivery=true)")
	return cmd
}

// queueARN turns a queue argument into its ARN: an ARN is one already; a
// name or URL is asked for its QueueArn attribute.
func queueARN(cmd *cobra.Command, o *clientOptions, queue string) (string, error) {
	if strings.HasPrefix(queue, "arn:") {
		return queue, nil
	}
	c, url, err := o.queueClient(cmd, queue)
	if err != nil {
		return "", err
	}
	out, err := c.GetQueueAttributes(cmd.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", namedError("queue", queue, err)
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}

func topicSubscriptionsCommand(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "subscriptions [TOPIC]",
		Short: "List the subscriptions of a topic, or of every topic",
		Long:  "Print one subscription a line: its ARN, protocol and endpoint (a queue's ARN), tab-aligned.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.snsClient(cmd)
			if err != nil {
				return err
			}
			var subs []snstypes.Subscription
			if len(args) == 1 {
				topic, err := topicARN(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				pages := awssns.NewListSubscriptionsByTopicPaginator(c, &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
				for pages.HasMorePages() {
					page, err := pages.NextPage(cmd.Context())
					if err != nil {
						return namedError("topic", args[0], err)
					}
					subs = append(subs, page.Subscriptions...)
				}
			} else {
				pages := awssns.NewListSubscriptionsPaginator(c, &awssns.ListSubscriptionsInput{})
				for pages.HasMorePages() {
					page, err := pages.NextPage(cmd.Context())
					if err != nil {
						return apiError(err)
					}
					subs = append(subs, page.Subscriptions...)
				}
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			for _, s := range subs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", aws.ToString(s.SubscriptionArn), aws.ToString(s.Protocol), aws.ToString(s.Endpoint))
			}
			return tw.Flush()
		},
	}
}

// publishCommand is `baton publish`: publish one message to a topic.
func publishCommand() *cobra.Command {
	var (
		o                     clientOptions
		attrs                 []string
		subject, group, dedup string
		asJSON                bool
	)
	cmd := &cobra.Command{
		Use:   "publish TOPIC [MESSAGE]",
		Short: "Publish a message to a topic and print its id",
		Long: "Publish one message to TOPIC (a name or an ARN) and print its message id once every subscribed\n" +
			"queue holds its copy. The message is MESSAGE, or standard input byte for byte when MESSAGE is\n" +
			"absent or \"-\". Attributes are given as for `baton send` (NAME=TYPE:VALUE).",
		Example: "  baton publish orders '{\"id\": 7}' -a kind=String:refund\n" +
			"  baton publish orders.fifo 'paid' --group customer-42 --dedup-id order-7-paid",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			msg, err := bodyArg(cmd, args)
			if err != nil {
				return err
			}
			ma, err := parseMessageAttributes(attrs)
			if err != nil {
				return err
			}
			in := &awssns.PublishInput{Message: aws.String(msg), MessageAttributes: snsAttributes(ma)}
			for p, v := range map[**string]string{&in.Subject: subject, &in.MessageGroupId: group, &in.MessageDeduplicationId: dedup} {
				if v != "" {
					*p = aws.String(v)
				}
			}
			c, arn, err := o.topicClient(cmd, args[0])
			if err != nil {
				return err
			}
			in.TopicArn = aws.String(arn)
			out, err := c.Publish(cmd.Context(), in)
			if err != nil {
				return namedError("topic", args[0], err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(publishResult{MessageID: aws.ToString(out.MessageId), SequenceNumber: aws.ToString(out.SequenceNumber)})
			}
			fmt.Fprintln(cmd.OutOrStdout(), aws.ToString(out.MessageId))
			return nil
		},
	}
	o.register(cmd.Flags())
	o.registerTimeout(cmd.Flags(), answerTimeout)
	f := cmd.Flags()
	f.StringArrayVarP(&attrs, "attribute", "a", nil, "message attribute NAME=TYPE:VALUE (repeatable)")
	f.StringVar(&subject, "subject", "", "the message's Subject (in the envelope)")
	f.StringVar(&group, "group", "", "message group id (FIFO topics; on a standard topic, passed to fair queues)")
	f.StringVar(&dedup, "dedup-id", "", "message deduplication id (FIFO topics)")
	f.BoolVar(&asJSON, "json", false, "print the Publish result as JSON")
	return cmd
}

// publishResult is `baton publish --json`'s output, spelled as Publish's
// response is.
type publishResult struct {
	MessageID      string `json:"MessageId"`
	SequenceNumber string `json:"SequenceNumber,omitempty"`
}

// snsAttributes are message attributes parsed for SQS, as SNS's type.
func snsAttributes(in map[string]sqstypes.MessageAttributeValue) map[string]snstypes.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]snstypes.MessageAttributeValue, len(in))
	for k, v := range in {
		out[k] = snstypes.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}
