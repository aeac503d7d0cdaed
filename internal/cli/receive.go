package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/engine/ledger"
)

// stderrIsTerminal tells whether receive's standard error is a terminal,
// where a person waits on it (a variable for tests).
var stderrIsTerminal = isTerminal

// waitNoticeAfter is how long a receive waits before it says it is waiting.
const waitNoticeAfter = time.Second

// noteWaiting says on w, a terminal, that the receive is waiting for a
// message on queue once it has waited waitNoticeAfter, so that a long poll
// does not look like a hang. wait is --wait, if given. The returned stop
// ends the wait; the notice is not written after it returns.
func noteWaiting(w io.Writer, queue string, wait int, given bool) (stop func()) {
	if !stderrIsTerminal(w) {
		return func() {}
	}
	how := "up to the queue's ReceiveMessageWaitTimeSeconds"
	if given {
		how = fmt.Sprintf("up to %ds", wait)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTimer(waitNoticeAfter)
		defer t.Stop()
		select {
		case <-t.C:
			fmt.Fprintf(w, "waiting for a message on %s (%s; Ctrl-C to stop)…\n", queue, how)
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// receiveCommand is `baton receive`: receive (lease) messages and print
// them, optionally deleting them once printed.
func receiveCommand() *cobra.Command {
	var (
		o          clientOptions
		count      int
		wait       int
		visibility int
		del        bool
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "receive QUEUE",
		Short: "Receive messages and print them",
		Long: "Receive up to --count messages from QUEUE (a name or a URL) and print them with their\n" +
			"attributes and receipt handles. A received message is leased, not removed: it comes back\n" +
			"after the visibility timeout unless it is deleted; --delete deletes each message once it\n" +
			"has been printed. No message is not an error: the output is empty (\"no messages\" on\n" +
			"standard error), or {\"Messages\": []} with --json.",
		Example: "  baton receive jobs\n" +
			"  baton receive jobs --count 10 --wait 20 --delete\n" +
			"  baton receive jobs --json | jq -r '.Messages[].Body'",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeQueues,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.longPoll = longestLongPoll // --timeout counts from the end of the wait
			c, url, err := o.queueClient(cmd, args[0])
			if err != nil {
				return err
			}
			in := &sqs.ReceiveMessageInput{
				QueueUrl:                    aws.String(url),
				MaxNumberOfMessages:         int32(count),
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
				MessageAttributeNames:       []string{"All"},
			}
			zero := []string{"MaxNumberOfMessages"}
			if cmd.Flags().Changed("wait") {
				in.WaitTimeSeconds = int32(wait)
				zero = append(zero, "WaitTimeSeconds")
			}
			if cmd.Flags().Changed("visibility") {
				in.VisibilityTimeout = int32(visibility)
				zero = append(zero, "VisibilityTimeout")
			}
			stop := noteWaiting(cmd.ErrOrStderr(), args[0], wait, cmd.Flags().Changed("wait"))
			// The app id tells the lease doctor this receive is a person's
			// look, not a consumer's (ledger.ReceiveToolAppID).
			asTool := func(o *sqs.Options) { o.AppID = ledger.ReceiveToolAppID }
			out, err := c.ReceiveMessage(cmd.Context(), in, sendZero(zero...), asTool)
			stop()
			if err != nil {
				return namedError("queue", args[0], err)
			}
			if asJSON {
				err = printMessagesJSON(cmd.OutOrStdout(), out.Messages)
			} else {
				err = printMessages(cmd.OutOrStdout(), out.Messages)
				if len(out.Messages) == 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "no messages")
				}
			}
			if err != nil || !del || len(out.Messages) == 0 {
				return err
			}
			return named("queue", args[0], deleteMessages(cmd, c, url, out.Messages))
		},
	}
	o.register(cmd.Flags())
	o.registerTimeout(cmd.Flags(), answerTimeout)
	f := cmd.Flags()
	f.IntVarP(&count, "count", "n", 1, "most messages to receive (1-10)")
	f.IntVar(&wait, "wait", 0, "seconds (0-20) to wait for a message to arrive (default: the queue's ReceiveMessageWaitTimeSeconds)")
	f.IntVar(&visibility, "visibility", 0, "seconds the messages stay leased (default: the queue's VisibilityTimeout)")
	f.BoolVar(&del, "delete", false, "delete the messages once printed")
	f.BoolVar(&asJSON, "json", false, "print {\"Messages\": […]} as ReceiveMessage answers it")
	return cmd
}

// deleteMessages deletes received messages by their receipt handles.
func deleteMessages(cmd *cobra.Command, c *sqs.Client, url string, msgs []types.Message) error {
	for chunk := range slices.Chunk(msgs, 10) {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := c.DeleteMessageBatch(cmd.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			return fmt.Errorf("delete: %w", apiError(err))
		}
		if len(out.Failed) > 0 {
			var b strings.Builder
			for _, f := range out.Failed {
				i, _ := strconv.Atoi(aws.ToString(f.Id))
				fmt.Fprintf(&b, "; %s: %s: %s", aws.ToString(chunk[i].MessageId), aws.ToString(f.Code), aws.ToString(f.Message))
			}
			return fmt.Errorf("delete: %d of %d messages were not deleted%s", len(out.Failed), len(chunk), b.String())
		}
	}
	return nil
}

// printMessages writes messages for a person: a header line per field, a
// blank line, the body, and a blank line between messages.
func printMessages(w io.Writer, msgs []types.Message) error {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "MessageId: %s\n", aws.ToString(m.MessageId))
		for _, name := range []string{"ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp",
			"MessageGroupId", "MessageDeduplicationId", "SequenceNumber", "DeadLetterQueueSourceArn"} {
			v, ok := m.Attributes[name]
			if !ok {
				continue
			}
			if strings.HasSuffix(name, "Timestamp") {
				if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
					v = time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
				}
			}
			fmt.Fprintf(&b, "%s: %s\n", name, v)
		}
		for _, name := range slices.Sorted(maps.Keys(m.MessageAttributes)) {
			a := m.MessageAttributes[name]
			v := aws.ToString(a.StringValue)
			if a.BinaryValue != nil {
				v = base64.StdEncoding.EncodeToString(a.BinaryValue)
			}
			fmt.Fprintf(&b, "Attribute %s (%s): %s\n", name, aws.ToString(a.DataType), v)
		}
		fmt.Fprintf(&b, "ReceiptHandle: %s\n\n%s\n", aws.ToString(m.ReceiptHandle), aws.ToString(m.Body))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// receivedMessage is one message of `baton receive --json`, spelled as
// ReceiveMessage's response is.
type receivedMessage struct {
	MessageID              string                      `json:"MessageId"`
	ReceiptHandle          string                      `json:"ReceiptHandle"`
	MD5OfBody              string                      `json:"MD5OfBody"`
	Body                   string                      `json:"Body"`
	Attributes             map[string]string           `json:"Attributes,omitempty"`
	MD5OfMessageAttributes string                      `json:"MD5OfMessageAttributes,omitempty"`
	MessageAttributes      map[string]messageAttribute `json:"MessageAttributes,omitempty"`
}

// messageAttribute is a message attribute in `baton receive --json`; a
// binary value is base64, as in AWS's JSON.
type messageAttribute struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue,omitempty"`
	BinaryValue []byte `json:"BinaryValue,omitempty"`
}

// printMessagesJSON writes messages as {"Messages": […]}, an empty list
// when there are none.
func printMessagesJSON(w io.Writer, msgs []types.Message) error {
	out := struct {
		Messages []receivedMessage `json:"Messages"`
	}{Messages: make([]receivedMessage, 0, len(msgs))}
	for _, m := range msgs {
		rm := receivedMessage{
			MessageID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			MD5OfBody: aws.ToString(m.MD5OfBody), Body: aws.ToString(m.Body), Attributes: m.Attributes,
			MD5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		}
		if len(m.MessageAttributes) > 0 {
			rm.MessageAttributes = make(map[string]messageAttribute, len(m.MessageAttributes))
			for name, a := range m.MessageAttributes {
				rm.MessageAttributes[name] = messageAttribute{
					DataType: aws.ToString(a.DataType), StringValue: aws.ToString(a.StringValue), BinaryValue: a.BinaryValue,
				}
			}
		}
		out.Messages = append(out.Messages, rm)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
