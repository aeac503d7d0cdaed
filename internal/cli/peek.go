package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/server"
)

// peekPage is the most messages one admin API request asks for: its limit.
const peekPage = 1000

// peekCommand is `baton peek`: list a queue's messages without receiving
// them, through the admin API's browse.
func peekCommand() *cobra.Command {
	var (
		o        clientOptions
		count    int
		states   []string
		contains string
		oldest   bool
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "peek QUEUE",
		Short: "List a queue's messages without receiving them",
		Long: "peek lists up to -n of QUEUE's messages (a name or a URL), newest first, with their state\n" +
			"(visible, inflight with the lease's deadline, or delayed), receive count, attributes and body.\n" +
			"Unlike receive it takes no lease: no message is hidden, no receive count grows and the\n" +
			"lease reports see nothing. It reads the admin API, signed like the SQS requests.",
		Example: "  baton peek jobs\n" +
			"  baton peek jobs -n 100 --state inflight\n" +
			"  baton peek jobs --contains order-42 --oldest --json | jq -r '.messages[].body'",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeQueues,
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 {
				return fmt.Errorf("-n must be at least 1, not %d", count)
			}
			q := url.Values{}
			for _, st := range states {
				for _, name := range strings.Split(st, ",") {
					switch strings.TrimSpace(name) {
					case "visible", "inflight", "in-flight", "in_flight", "delayed":
						q.Add("state", strings.TrimSpace(name))
					default:
						return fmt.Errorf("--state %q: want visible, inflight or delayed", name)
					}
				}
			}
			if contains != "" {
				q.Set("contains", contains)
			}
			if oldest {
				q.Set("order", "oldest")
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			name := queueName(args[0])
			var all server.BrowseJSON
			for cursor := ""; ; {
				q.Set("limit", strconv.Itoa(min(count-len(all.Messages), peekPage)))
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var page server.BrowseJSON
				err := adminGet(cmd, c, o.resolvedEndpoint(cmd), "/admin/api/queues/"+url.PathEscape(name)+"/messages?"+q.Encode(), "queue "+name, &page)
				if err != nil {
					return err
				}
				if all.Messages == nil {
					all = page
				} else {
					all.Messages = append(all.Messages, page.Messages...)
					all.NextCursor = page.NextCursor
				}
				if cursor = page.NextCursor; cursor == "" || len(all.Messages) >= count {
					break
				}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(all)
			}
			if len(all.Messages) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no messages")
				return nil
			}
			return printBrowsed(w, all)
		},
	}
	o.register(cmd.Flags())
	o.registerTimeout(cmd.Flags(), answerTimeout)
	f := cmd.Flags()
	f.IntVarP(&count, "count", "n", 10, "most messages to list")
	f.StringSliceVar(&states, "state", nil, "list only messages in these states: visible, inflight, delayed (repeat or separate by commas)")
	f.StringVar(&contains, "contains", "", "list only messages whose body contains this text")
	f.BoolVar(&oldest, "oldest", false, "list the oldest messages first")
	f.BoolVar(&asJSON, "json", false, "print the admin API's answer: {\"messages\": […]}")
	return cmd
}

// printBrowsed writes browsed messages for a person, as printMessages does
// received ones: a header line per field, a blank line, the body, and a
// blank line between messages.
func printBrowsed(w io.Writer, page server.BrowseJSON) error {
	var b strings.Builder
	stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
	for i, m := range page.Messages {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "MessageId: %s\n", m.MessageID)
		switch {
		case m.LeaseDeadline != nil:
			fmt.Fprintf(&b, "State: %s until %s (%s left)\n", m.State, stamp(*m.LeaseDeadline), left(page.Now, *m.LeaseDeadline))
		case m.VisibleAt != nil:
			fmt.Fprintf(&b, "State: %s until %s (%s left)\n", m.State, stamp(*m.VisibleAt), left(page.Now, *m.VisibleAt))
		default:
			fmt.Fprintf(&b, "State: %s\n", m.State)
		}
		fmt.Fprintf(&b, "ReceiveCount: %d\nSent: %s\n", m.ReceiveCount, stamp(m.SentAt))
		for _, name := range []string{"MessageGroupId", "MessageDeduplicationId", "SequenceNumber", "DeadLetterQueueSourceArn", "AWSTraceHeader"} {
			if v, ok := m.Attributes[name]; ok {
				fmt.Fprintf(&b, "%s: %s\n", name, v)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(m.MessageAttributes)) {
			a := m.MessageAttributes[name]
			v := a.StringValue
			if a.BinaryValue != nil {
				v = base64.StdEncoding.EncodeToString(a.BinaryValue)
			}
			fmt.Fprintf(&b, "Attribute %s (%s): %s\n", name, a.DataType, v)
		}
		if m.BodyBase64 {
			b.WriteString("Body: base64, not UTF-8\n")
		}
		fmt.Fprintf(&b, "\n%s\n", m.Body)
	}
	if page.NextCursor != "" {
		fmt.Fprintf(&b, "\n(more messages: raise -n to list them)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// left is the time from now to t, in whole seconds.
func left(now, t time.Time) time.Duration {
	return max(t.Sub(now), 0).Round(time.Second)
}
