// Package dashboard is Baton's web dashboard: a few pages of plain HTML
// (html/template), one script and one style sheet, all embedded with
// embed.FS so that `go build` needs no other step and the pages load nothing
// from elsewhere.
//
// The pages are drawn in the browser from the server's admin API: views of
// the queues, of one queue (counts, leases in flight with their countdowns,
// the lease-duration histogram against the visibility timeout, the lease
// doctor's advice, late completions, move tasks, attributes), of one
// message's lease timeline, of the SNS topics, of one topic with what was
// recorded, not sent, to its email, SMS, Lambda and Firehose subscriptions,
// and of the SMS published to phone numbers, each kept current by a
// server-sent event stream (package server, admin_stream.go). Times come
// from the server's clock, never the browser's, so a countdown or a
// timeline reads the queue's own time, a test's fake clock included.
// Actions (send a test message, purge, set attributes, start or cancel a
// redrive, clear the recorded SNS copies) are POSTs or DELETEs to the same
// API and follow the SQS actions' rules; a refusal shows the SQS error.
package dashboard
