package sns_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/sns"
)

// TestDeliveryRecordBound: the record keeps the MaxDeliveryRecords newest
// copies, counts those it drops and says so in the log once, until a
// clear makes room; and holds no more than MaxDeliveryBytes of payloads.
func TestDeliveryRecordBound(t *testing.T) {
	t.Parallel()
	svc, logs := newLoggedService(t)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	sms := func(n int, msg string) {
		t.Helper()
		for range n {
			if _, err := svc.Publish(ctx, c, sns.PublishParams{PhoneNumber: "+15555550100", Message: msg}); err != nil {
				t.Fatal(err)
			}
		}
	}
	const full = "the record of copies Baton does not deliver is full"
	sms(sns.MaxDeliveryRecords+5, "hi")
	got := svc.Deliveries(sns.DeliveryFilter{})
	if got.Kept != sns.MaxDeliveryRecords || got.Dropped != 5 || len(got.Records) != sns.MaxDeliveryRecords ||
		got.Records[0].Seq != 6 || got.Records[len(got.Records)-1].Seq != sns.MaxDeliveryRecords+5 {
		t.Fatalf("kept %d, dropped %d, %d records from seq %d; want %d kept, 5 dropped, from seq 6",
			got.Kept, got.Dropped, len(got.Records), got.Records[0].Seq, sns.MaxDeliveryRecords)
	}
	if n := len(logs.records(t, full)); n != 1 {
		t.Errorf("%d log lines say the record is full, want 1", n)
	}
	if n := svc.ClearDeliveries(sns.DeliveryFilter{Account: "000000000000"}); n != sns.MaxDeliveryRecords {
		t.Errorf("cleared %d, want %d", n, sns.MaxDeliveryRecords)
	}

	big := strings.Repeat("x", sns.MaxPublishSize)
	sms(sns.MaxDeliveryBytes/sns.MaxPublishSize+10, big)
	got = svc.Deliveries(sns.DeliveryFilter{})
	if got.Kept != sns.MaxDeliveryBytes/sns.MaxPublishSize || got.Dropped != 15 {
		t.Errorf("with payloads of %d bytes: kept %d, dropped %d; want %d kept, 15 dropped in all",
			sns.MaxPublishSize, got.Kept, got.Dropped, sns.MaxDeliveryBytes/sns.MaxPublishSize)
	}
	if n := len(logs.records(t, full)); n != 2 {
		t.Errorf("%d log lines say the record is full, want 2 (once more after the clear)", n)
	}
}
