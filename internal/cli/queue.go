package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"
)

// queueCommand is `baton queue`: create, list, purge and delete queues on a
// running server, and get and set their attributes.
func queueCommand() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Create, list, purge and delete queues; get and set their attributes",
		Long: "Manage the queues of a running Baton. QUEUE is a queue name (looked up with GetQueueUrl)\n" +
			"or a queue URL. Credentials and region are found as the AWS CLI finds them (AWS_* variables,\n" +
			"profiles); without any, dummy credentials are used, which a Baton without authentication accepts.",
	}
	groupOnly(cmd)
	o.register(cmd.PersistentFlags())
	o.registerTimeout(cmd.PersistentFlags(), answerTimeout)
	cmd.AddCommand(
		queueCreateCommand(&o), queueListCommand(&o), queueGetCommand(&o),
		queueSetCommand(&o), queuePurgeCommand(&o), queueDeleteCommand(&o),
	)
	return cmd
}

func queueCreateCommand(o *clientOptions) *cobra.Command {
	var attrs, tags []string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a queue and print its URL",
		Long: "Create a queue and print its URL. A name ending in .fifo makes a FIFO queue (FifoQueue=true\n" +
			"is implied). Creating a queue that exists with the same attributes prints its URL again.",
		Example: "  baton queue create jobs -a VisibilityTimeout=60 -t team=billing\n" +
			"  baton queue create orders.fifo -a ContentBasedDeduplication=true",
		Args: nameThenFlags,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, t, err := createPairs(args[0], "FifoQueue", attrs, tags)
			if err != nil {
				return err
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			out, err := c.CreateQueue(cmd.Context(), &sqs.CreateQueueInput{QueueName: aws.String(args[0]), Attributes: a, Tags: t})
			if err != nil {
				return namedError("queue", args[0], err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), aws.ToString(out.QueueUrl))
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&attrs, "attribute", "a", nil, "queue attribute NAME=VALUE (repeatable), e.g. VisibilityTimeout=60")
	cmd.Flags().StringArrayVarP(&tags, "tag", "t", nil, "tag KEY=VALUE (repeatable)")
	return cmd
}

func queueListCommand(o *clientOptions) *cobra.Command {
	var prefix string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Print the URL of every queue, one a line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			in := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
			if prefix != "" {
				in.QueueNamePrefix = aws.String(prefix)
			}
			pages := sqs.NewListQueuesPaginator(c, in)
			for pages.HasMorePages() {
				page, err := pages.NextPage(cmd.Context())
				if err != nil {
					return apiError(err)
				}
				for _, u := range page.QueueUrls {
					fmt.Fprintln(cmd.OutOrStdout(), u)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only queues whose name starts with this")
	return cmd
}

func queueGetCommand(o *clientOptions) *cobra.Command {
	var names []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "get QUEUE",
		Short:             "Print a queue's attributes",
		Example:           "  baton queue get jobs\n  baton queue get jobs -a ApproximateNumberOfMessages --json",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeQueues,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, url, err := o.queueClient(cmd, args[0])
			if err != nil {
				return err
			}
			in := &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}}
			if len(names) > 0 {
				in.AttributeNames = nil
				for _, n := range names {
					in.AttributeNames = append(in.AttributeNames, types.QueueAttributeName(n))
				}
			}
			out, err := c.GetQueueAttributes(cmd.Context(), in)
			if err != nil {
				return namedError("queue", args[0], err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"QueueUrl": url, "Attributes": out.Attributes})
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			for _, n := range slices.Sorted(maps.Keys(out.Attributes)) {
				fmt.Fprintf(tw, "%s\t%s\n", n, out.Attributes[n])
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringArrayVarP(&names, "attribute", "a", nil, "attribute to show (repeatable; default All)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"QueueUrl\": …, \"Attributes\": {…}} as JSON")
	return cmd
}

func queueSetCommand(o *clientOptions) *cobra.Command {
	var attrs []string
	cmd := &cobra.Command{
		Use:               "set QUEUE -a NAME=VALUE...",
		Short:             "Change a queue's attributes",
		Example:           "  baton queue set jobs -a VisibilityTimeout=120 -a DelaySeconds=5",
		Args:              nameThenFlags,
		ValidArgsFunction: o.completeQueues,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := parsePairs("--attribute", attrs)
			if err != nil {
				return err
			}
			if len(a) == 0 {
				return errors.New("nothing to set: give at least one --attribute NAME=VALUE")
			}
			c, url, err := o.queueClient(cmd, args[0])
			if err != nil {
				return err
			}
			_, err = c.SetQueueAttributes(cmd.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: a})
			return namedError("queue", args[0], err)
		},
	}
	cmd.Flags().StringArrayVarP(&attrs, "attribute", "a", nil, "attribute NAME=VALUE to set (repeatable)")
	return cmd
}

func queuePurgeCommand(o *clientOptions) *cobra.Command {
	return oneQueueCommand(o, "purge QUEUE", "Delete every message in a queue (at most once a minute)",
		func(ctx context.Context, c *sqs.Client, url string) error {
			_, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
			return err
		})
}

func queueDeleteCommand(o *clientOptions) *cobra.Command {
	return oneQueueCommand(o, "delete QUEUE", "Delete a queue and its messages",
		func(ctx context.Context, c *sqs.Client, url string) error {
			_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			return err
		})
}

// oneQueueCommand is a command that does one call on a queue given by name
// or URL.
func oneQueueCommand(o *clientOptions, use, short string, call func(ctx context.Context, c *sqs.Client, url string) error) *cobra.Command {
	return &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeQueues,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, url, err := o.queueClient(cmd, args[0])
			if err != nil {
				return err
			}
			return namedError("queue", args[0], call(cmd.Context(), c, url))
		},
	}
}

// nameThenFlags is the Args of a command taking one name and its pairs
// as -a NAME=VALUE: a pair given as a second argument (baton queue set
// jobs VisibilityTimeout=60, as one might guess) is refused with the
// command line that does it, not cobra's "accepts 1 arg(s), received 2".
func nameThenFlags(cmd *cobra.Command, args []string) error {
	if len(args) > 1 && strings.Contains(args[1], "=") {
		fixed := cmd.CommandPath() + " " + args[0]
		for _, a := range args[1:] {
			fixed += " -a " + a
		}
		return fmt.Errorf("%s takes NAME=VALUE as -a NAME=VALUE, not as an argument: %s",
			strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), fixed)
	}
	return cobra.ExactArgs(1)(cmd, args)
}

// createPairs parses a create command's --attribute and --tag flags. A
// name ending in .fifo implies fifoAttr=true unless the attributes say
// otherwise (impliedFIFO).
func createPairs(name, fifoAttr string, attrs, tags []string) (a, t map[string]string, err error) {
	if a, err = parsePairs("--attribute", attrs); err != nil {
		return nil, nil, err
	}
	if t, err = parsePairs("--tag", tags); err != nil {
		return nil, nil, err
	}
	return impliedFIFO(name, fifoAttr, a), t, nil
}

// impliedFIFO sets attribute attr to "true" in a when name ends in .fifo
// and a does not say otherwise: a FIFO queue's or topic's name implies it.
func impliedFIFO(name, attr string, a map[string]string) map[string]string {
	if _, given := a[attr]; given || !strings.HasSuffix(name, ".fifo") {
		return a
	}
	if a == nil {
		a = map[string]string{}
	}
	a[attr] = "true"
	return a
}
