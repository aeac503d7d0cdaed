package cli

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"
)

// maxStdinBody bounds what `baton send` reads from standard input: more than
// any valid message (1 MiB), so the server reports the real limit.
const maxStdinBody = 2 << 20

// sendCommand is `baton send`: send one message.
func sendCommand() *cobra.Command {
	var (
		o       clientOptions
		attrs   []string
		delay   int
		group   string
		dedupID string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "send QUEUE [BODY]",
		Short: "Send a message and print its id",
		Long: "Send one message to QUEUE (a name or a URL) and print its message id (and, on a FIFO\n" +
			"queue, its sequence number). The body is BODY, or standard input byte for byte when BODY is\n" +
			"absent or \"-\".\n\n" +
			"A message attribute is NAME=TYPE:VALUE, TYPE being String, Number or Binary, optionally with a\n" +
			"custom label (Number.int); a Binary VALUE is base64. Without a known TYPE prefix the whole\n" +
			"value is a String: -a url=https://example.com is a String.",
		Example: "  baton send jobs 'hello'\n" +
			"  echo '{\"id\": 7}' | baton send jobs -a Kind=String:order -a Priority=Number:3\n" +
			"  baton send orders.fifo 'paid' --group customer-42 --dedup-id order-7-paid",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeQueues,
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := bodyArg(cmd, args)
			if err != nil {
				return err
			}
			ma, err := parseMessageAttributes(attrs)
			if err != nil {
				return err
			}
			in := &sqs.SendMessageInput{MessageBody: aws.String(body), MessageAttributes: ma}
			var zero []string
			if cmd.Flags().Changed("delay") {
				in.DelaySeconds = int32(delay)
				zero = append(zero, "DelaySeconds")
			}
			if group != "" {
				in.MessageGroupId = aws.String(group)
			}
			if dedupID != "" {
				in.MessageDeduplicationId = aws.String(dedupID)
			}
			c, url, err := o.queueClient(cmd, args[0])
			if err != nil {
				return err
			}
			in.QueueUrl = aws.String(url)
			out, err := c.SendMessage(cmd.Context(), in, sendZero(zero...))
			if err != nil {
				return namedError("queue", args[0], err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				res := sendResult{
					MessageID: aws.ToString(out.MessageId), MD5OfMessageBody: aws.ToString(out.MD5OfMessageBody),
					MD5OfMessageAttributes: aws.ToString(out.MD5OfMessageAttributes), SequenceNumber: aws.ToString(out.SequenceNumber),
				}
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			if out.SequenceNumber != nil {
				fmt.Fprintln(w, aws.ToString(out.MessageId), aws.ToString(out.SequenceNumber))
				return nil
			}
			fmt.Fprintln(w, aws.ToString(out.MessageId))
			return nil
		},
	}
	o.register(cmd.Flags())
	o.registerTimeout(cmd.Flags(), answerTimeout)
	f := cmd.Flags()
	f.StringArrayVarP(&attrs, "attribute", "a", nil, "message attribute NAME=TYPE:VALUE (repeatable)")
	f.IntVar(&delay, "delay", 0, "seconds (0-900) before the message can be received (default: the queue's DelaySeconds)")
	f.StringVar(&group, "group", "", "message group id (FIFO and fair queues)")
	f.StringVar(&dedupID, "dedup-id", "", "message deduplication id (FIFO queues)")
	f.BoolVar(&asJSON, "json", false, "print the SendMessage result as JSON")
	return cmd
}

// bodyArg is a message body given as args[1], or read from standard input
// byte for byte when args has no second argument or it is "-". Empty
// standard input is an error that says so: what reaches the server
// otherwise is a missing parameter, which does not say where it went.
func bodyArg(cmd *cobra.Command, args []string) (string, error) {
	if len(args) == 2 && args[1] != "-" {
		return args[1], nil
	}
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && isTerminal(f) {
		fmt.Fprintln(cmd.ErrOrStderr(), "reading the body from standard input; end it with Ctrl-D (or give it as an argument)")
	}
	b, err := io.ReadAll(io.LimitReader(in, maxStdinBody+1))
	if err != nil {
		return "", fmt.Errorf("read the body from standard input: %w", err)
	}
	if len(b) > maxStdinBody {
		return "", fmt.Errorf("the body on standard input is larger than %d bytes", maxStdinBody)
	}
	if len(b) == 0 {
		return "", errors.New("no body: standard input was empty (give the body as an argument, or on standard input)")
	}
	return string(b), nil
}

// sendResult is `baton send --json`'s output, spelled as SendMessage's
// response is.
type sendResult struct {
	MessageID              string `json:"MessageId"`
	MD5OfMessageBody       string `json:"MD5OfMessageBody"`
	MD5OfMessageAttributes string `json:"MD5OfMessageAttributes,omitempty"`
	SequenceNumber         string `json:"SequenceNumber,omitempty"`
}

// parseMessageAttributes parses repeated --attribute NAME=TYPE:VALUE flags.
func parseMessageAttributes(specs []string) (map[string]types.MessageAttributeValue, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	attrs := make(map[string]types.MessageAttributeValue, len(specs))
	for _, spec := range specs {
		name, rest, ok := strings.Cut(spec, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--attribute %q: want NAME=TYPE:VALUE", spec)
		}
		if _, dup := attrs[name]; dup {
			return nil, fmt.Errorf("--attribute %s is given twice", name)
		}
		dataType, value := "String", rest
		if t, v, ok := strings.Cut(rest, ":"); ok && isAttributeType(t) {
			dataType, value = t, v
		}
		av := types.MessageAttributeValue{DataType: aws.String(dataType)}
		if strings.HasPrefix(dataType, "Binary") {
			b, err := base64.StdEncoding.DecodeString(value)
			if err != nil {
				return nil, fmt.Errorf("--attribute %s: a Binary value is base64: %w", name, err)
			}
			av.BinaryValue = b
		} else {
			av.StringValue = aws.String(value)
		}
		attrs[name] = av
	}
	return attrs, nil
}

// isAttributeType reports whether t is String, Number or Binary, with or
// without a .label.
func isAttributeType(t string) bool {
	base, _, _ := strings.Cut(t, ".")
	return base == "String" || base == "Number" || base == "Binary"
}
