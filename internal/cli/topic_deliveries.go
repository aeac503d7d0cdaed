package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/server"
)

// topicDeliveriesCommand is `baton topic deliveries`: what Baton recorded
// instead of sending an email, SMS, Lambda event or Firehose record
// (GET and DELETE /admin/api/sns/deliveries).
func topicDeliveriesCommand(o *clientOptions) *cobra.Command {
	var (
		protocol, endpoint, topic, typ string
		clearThem, asJSON, direct      bool
	)
	cmd := &cobra.Command{
		Use:   "deliveries",
		Short: "Print (or clear) what SNS would have sent to email, sms, lambda and firehose subscriptions and phone numbers",
		Long: "Baton sends no email or SMS and invokes no Lambda function or Firehose stream: it records what AWS\n" +
			"would have sent them (docs/sns.md, \"Other protocols\"). Print the records of the account, oldest first:\n" +
			"each as a line saying when, what and where, the email's subject, then the payload. The server keeps the\n" +
			"1000 newest, in memory, per node. --clear deletes the records the flags select instead.",
		Example: "  baton topic deliveries --protocol sms --endpoint +15555550100\n" +
			"  baton topic deliveries --topic alarms --json\n  baton topic deliveries --direct --clear",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for k, v := range map[string]string{"protocol": protocol, "endpoint": endpoint, "topic": topic, "type": typ} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if direct {
				q.Set("direct", "true")
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			path := o.resolvedEndpoint(cmd) + "/admin/api/sns/deliveries?" + q.Encode()
			if clearThem {
				var out struct {
					Cleared int `json:"cleared"`
				}
				if err := adminRequest(cmd, c, http.MethodDelete, path, nil, "deliveries", &out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cleared %d\n", out.Cleared)
				return nil
			}
			var out server.SNSDeliveriesJSON
			if err := adminRequest(cmd, c, http.MethodGet, path, nil, "deliveries", &out); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			printDeliveries(cmd.OutOrStdout(), cmd.ErrOrStderr(), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&protocol, "protocol", "", "only this protocol: email, email-json, sms, lambda or firehose")
	f.StringVar(&endpoint, "endpoint", "", "only this endpoint: an email address, a phone number, a function's or stream's ARN")
	f.StringVar(&topic, "topic", "", "only this topic (a name or ARN)")
	f.StringVar(&typ, "type", "", "only Notification or SubscriptionConfirmation")
	f.BoolVar(&direct, "direct", false, "only the publishes made to a phone number, not through a topic")
	f.BoolVar(&clearThem, "clear", false, "delete the selected records instead of printing them")
	f.BoolVar(&asJSON, "json", false, "print the admin API's JSON")
	return cmd
}

// printDeliveries prints each record: a line saying when, what and where,
// the subject, the payload, then a blank line; and to errw what the
// server dropped for room.
func printDeliveries(w, errw io.Writer, out server.SNSDeliveriesJSON) {
	if len(out.Deliveries) == 0 {
		fmt.Fprintln(errw, "no deliveries recorded")
	}
	for _, d := range out.Deliveries {
		from := "published to the number"
		if d.TopicARN != "" {
			from = "topic " + d.TopicARN[strings.LastIndexByte(d.TopicARN, ':')+1:]
		}
		fmt.Fprintf(w, "%s  %s  %s %s  %s  message %s\n", d.At.Format("2006-01-02T15:04:05.000Z"), d.Type, d.Protocol, d.Endpoint, from, d.MessageID)
		if d.Subject != "" {
			fmt.Fprintf(w, "Subject: %s\n", d.Subject)
		}
		fmt.Fprintf(w, "%s\n\n", d.Payload)
	}
	if out.Dropped > 0 {
		fmt.Fprintf(errw, "the server dropped %d older records for room (it keeps %d)\n", out.Dropped, out.Max)
	}
}
