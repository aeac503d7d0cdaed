package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/server"
)

func doctorCommand() *cobra.Command {
	var (
		opts    clientOptions
		asJSON  bool
		allRows bool
	)
	cmd := &cobra.Command{
		Use:   "doctor [QUEUE]",
		Short: "Tell which queues' handlers overrun their leases, and what timeout to set",
		Long: "doctor reads what the server saw of every lease in the last 15 minutes (or since it\n" +
			"started, when the window is quiet): late completions, lapsed leases, redeliveries and\n" +
			"lease durations, and says per queue whether leases are too short, handlers are failing,\n" +
			"holders stopped without releasing, leases are held far beyond what the others took,\n" +
			"batches fail whole, a person's look left leases to lapse, or all is well, with the\n" +
			"visibility timeout to set. Each finding says how many leases it rests on; none is made on\n" +
			"fewer than 3. The server keeps this history in memory: it starts when the server starts, with\n" +
			"the leases then in flight, whose holders it does not know.",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: opts.completeQueues,
		RunE: func(cmd *cobra.Command, args []string) error {
			queue := ""
			if len(args) == 1 {
				queue = args[0]
			}
			c, err := opts.clientFor(cmd, queue)
			if err != nil {
				return err
			}
			var names []string
			if len(args) == 1 {
				names = []string{queueName(args[0])}
			} else {
				// Every page: ListQueues answers at most 1,000 URLs a call.
				pages := sqs.NewListQueuesPaginator(c, &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)})
				for pages.HasMorePages() {
					out, err := pages.NextPage(cmd.Context())
					if err != nil {
						return apiError(err)
					}
					for _, u := range out.QueueUrls {
						names = append(names, queueName(u))
					}
				}
			}
			var reports []server.LeaseReportJSON
			for _, name := range names {
				rep, err := fetchLeaseReport(cmd, c, opts.resolvedEndpoint(cmd), name)
				if err != nil {
					return err
				}
				reports = append(reports, rep)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if len(args) == 1 {
					return enc.Encode(reports[0])
				}
				return enc.Encode(reports)
			}
			if len(reports) == 0 {
				fmt.Fprintln(w, "No queues.")
			}
			for i, rep := range reports {
				if i > 0 {
					fmt.Fprintln(w)
				}
				if !allRows && len(args) == 0 && rep.Diagnosis == ledger.DiagnosisNoLeases {
					fmt.Fprintf(w, "%s: no leases yet\n", rep.Queue)
					continue
				}
				writeReport(w, rep)
			}
			return nil
		},
	}
	opts.register(cmd.Flags())
	opts.registerTimeout(cmd.Flags(), answerTimeout)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reports as JSON (the admin API's fields)")
	cmd.Flags().BoolVar(&allRows, "all", false, "report queues that have seen no lease in full too")
	return cmd
}

// queueName is the last path segment of a queue URL, or the argument.
func queueName(q string) string { return q[strings.LastIndex(q, "/")+1:] }

// fetchLeaseReport GETs a queue's lease report from the admin API.
func fetchLeaseReport(cmd *cobra.Command, c *sqs.Client, endpoint, name string) (server.LeaseReportJSON, error) {
	var rep server.LeaseReportJSON
	err := adminGet(cmd, c, endpoint, "/admin/api/queues/"+url.PathEscape(name)+"/leases", "queue "+name, &rep)
	return rep, err
}

// writeReport prints a report as a short text a person acts on.
func writeReport(w io.Writer, r server.LeaseReportJSON) {
	verdict := []string{strings.ToUpper(r.Diagnosis)}
	for _, f := range r.Findings[min(1, len(r.Findings)):] {
		verdict = append(verdict, strings.ToUpper(f.Kind))
	}
	fmt.Fprintf(w, "%s: %s\n", r.Queue, strings.Join(verdict, " + "))
	// The figures of the period the findings were judged on.
	s := r.LeaseStatsJSON
	period := fmt.Sprintf("in the last %d minutes", r.WindowMinutes)
	if r.Period == "since_start" {
		s, period = r.SinceStart, "since this server started"
	}
	fmt.Fprintf(w, "  %d leases begun and %d completed %s; visibility timeout %ds\n", s.LeasesStarted, s.LeasesCompleted, period, r.VisibilityTimeoutSeconds)
	if s.LateDeletesRefused > 0 {
		fmt.Fprintf(w, "  %d late deletes refused (FIFO): messages not deleted, their handlers' time counted below\n", s.LateDeletesRefused)
	}
	if s.DeletesAlreadyDeleted > 0 {
		fmt.Fprintf(w, "  %d deletes found their message already deleted: they deleted nothing, their handlers' time counted below\n", s.DeletesAlreadyDeleted)
	}
	if n, fifo := s.LeasesCompletedTimeUnknown, s.LeasesCompletedTimeUnknownInTime; n > 0 {
		whether := "whether in time not known"
		if fifo >= n {
			whether = "in time (FIFO refuses a late delete), when not known"
		} else if fifo > 0 {
			whether = fmt.Sprintf("%d in time (FIFO refuses a late delete), whether the others were not known", fifo)
		}
		fmt.Fprintf(w, "  %d completed by a delete whose answer was lost, retried after the lease's end: %s, no handler time counted\n", n, whether)
	}
	if s.LeasesTimed > 0 {
		fmt.Fprintf(w, "  lease duration (receive to delete): p50 %.1fs  p90 %.1fs  p99 %.1fs  max %.1fs\n",
			s.LeaseP50Seconds, s.LeaseP90Seconds, s.LeaseP99Seconds, s.LeaseMaxSeconds)
	}
	if s.ExpiredLeases+s.LateCompletions > 0 {
		fmt.Fprintf(w, "  %s lapsed; %s (deletes or visibility changes after the lease lapsed) by %s\n",
			counted(s.ExpiredLeases, "lease", "leases"), counted(s.LateCompletions, "late completion", "late completions"),
			counted(s.LateLeases, "lease", "leases"))
		fmt.Fprintf(w, "  %s\n", duplicatesLine(s))
		failed := ""
		if s.RedeliveriesStoreFailed > 0 {
			failed = fmt.Sprintf(", %d whose holder deleted in time and the store failed the delete", s.RedeliveriesStoreFailed)
		}
		fmt.Fprintf(w, "  redeliveries: %d lapsed while the holder was still working%s, %d where it has not come back\n",
			s.RedeliveriesLapsedWhileWorking, failed, s.RedeliveriesNeverReturned)
	}
	if s.Renewals+s.Releases > 0 {
		fmt.Fprintf(w, "  %d renewals (%.1f per lease), %d releases\n", s.Renewals, s.RenewalsPerLease, s.Releases)
	}
	if r.RecommendedVisibilityTimeoutSeconds != r.VisibilityTimeoutSeconds {
		fmt.Fprintf(w, "  recommended visibility timeout: %ds\n", r.RecommendedVisibilityTimeoutSeconds)
	}
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "  %s\n", r.Advice)
	}
	for i, f := range r.Findings {
		fmt.Fprintf(w, "  [%d/%d] %s, on %d leases\n", i+1, len(r.Findings), f.Kind, f.Leases)
		fmt.Fprintf(w, "    seen: %s\n", f.Evidence)
		if f.LastSeen != "" {
			fmt.Fprintf(w, "    %s\n", f.LastSeen)
		}
		for _, h := range f.HeldLeases {
			fmt.Fprintf(w, "    lease: %s\n", heldLine(h))
		}
		fmt.Fprintf(w, "    fix:  %s\n", f.Fix)
	}
	if r.HistoryNote != "" {
		fmt.Fprintf(w, "  %s\n", r.HistoryNote)
	}
}

// duplicatesLine says the confirmed duplicate executions and where they
// came from: late completions of leases whose message was received again
// meanwhile, or deletes in time the store failed, the message received
// again before the retry (store-failed).
func duplicatesLine(s server.LeaseStatsJSON) string {
	line := counted(s.ConfirmedDuplicates, "confirmed duplicate execution", "confirmed duplicate executions")
	if s.ConfirmedDuplicates == 0 {
		return line
	}
	failed := min(s.ConfirmedDuplicatesStoreFailed, s.ConfirmedDuplicates)
	return fmt.Sprintf("%s (messages worked twice): %d completed late after the message was received again, "+
		"%d deleted in time but the store failed the delete, the message received again before the retry",
		line, s.ConfirmedDuplicates-failed, failed)
}

// counted is n with the noun for n: one for 1, else many.
func counted[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// heldLine describes a lease a finding names, on one line.
func heldLine(h server.HeldLeaseJSON) string {
	line := "message " + h.MessageID
	if h.Running {
		line += fmt.Sprintf(" held %s", seconds(h.HeldSeconds))
	}
	if h.BeforeStart {
		line += ", leased before the server started (holder not known), renewed " + counted(h.Renewals, "time", "times") + " since"
	} else {
		line += ", renewed " + counted(h.Renewals, "time", "times")
	}
	if h.Progress {
		line += " (on progress)"
	}
	if h.Refusals > 0 {
		line += fmt.Sprintf(", %d renewals refused", h.Refusals)
	}
	if h.Running {
		line += fmt.Sprintf(", lease ends %s, 12 h ceiling in %s", h.Deadline.UTC().Format(time.RFC3339), seconds(h.CeilingInSeconds))
	}
	return line
}

// seconds prints a number of seconds as the doctor's evidence prints a
// duration (ledger.FormatDuration): a lease line under a finding says the
// same held time as the finding's evidence.
func seconds(s float64) string {
	return ledger.FormatDuration(time.Duration(s * float64(time.Second)))
}
