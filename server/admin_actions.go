package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// The dashboard's actions. Each takes a JSON body, runs one engine
// operation under the same rules as the SQS action of that name, and
// answers JSON; a refusal is the SQS error (see adminError).
//
//	POST /admin/api/queues/{name}/messages           {"body", "delay_seconds", "message_group_id", "message_deduplication_id"} → {"message_id"}
//	POST /admin/api/queues/{name}/purge              {} → {"purged": true}
//	POST /admin/api/queues/{name}/attributes         {"attributes": {"VisibilityTimeout": "60"}} → {"attributes": {...all}}
//	POST /admin/api/queues/{name}/move-tasks         {"destination_queue", "max_per_second"} → {"task_handle"}; the queue is the dead-letter queue to redrive
//	POST /admin/api/queues/{name}/move-tasks/cancel  {"task_handle"} → {"moved"}
//
// A browser sends credentials it holds for Basic authentication with any
// request, including one a hostile page makes it send (cross-site request
// forgery). So an action must be JSON, which a cross-site form cannot send
// and a cross-site script can only send after a CORS preflight this server
// never approves, and a request the browser marks as coming from another
// site or origin is refused.

// maxActionBytes bounds an action's body: a test message of the largest
// size, JSON-escaped, fits.
const maxActionBytes = 3 << 20

// action wraps an action handler with the cross-site checks and writes
// the error it returns.
func (s *Server) action(handle func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkSameOrigin(r); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error(), "code": "AccessDenied"})
			return
		}
		if err := handle(w, r); err != nil {
			s.adminError(w, err)
		}
	}
}

// checkSameOrigin refuses what a page of another origin could make a
// browser send (see checkCrossSite).
func checkSameOrigin(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errors.New("an admin action takes a JSON body (Content-Type: application/json)")
	}
	if err := checkCrossSite(r); err != nil {
		return fmt.Errorf("admin actions: %w", err)
	}
	return nil
}

// decodeAction reads an action's JSON body into v. Unknown fields are
// refused, so a misspelt field is not silently ignored.
func decodeAction(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxActionBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return baton.Errorf(baton.ErrInvalidParameterValue, "The request body is not valid JSON for this action: %v", err)
	}
	return nil
}

// SendActionJSON is the body of the send action.
type SendActionJSON struct {
	Body                   string `json:"body"`
	DelaySeconds           *int   `json:"delay_seconds,omitempty"`
	MessageGroupID         string `json:"message_group_id,omitempty"`
	MessageDeduplicationID string `json:"message_deduplication_id,omitempty"`
}

func (s *Server) actionSend(w http.ResponseWriter, r *http.Request) error {
	var in SendActionJSON
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	res, err := s.engine.SendMessage(r.Context(), s.adminRef(r), engine.SendParams{
		Body: in.Body, DelaySeconds: in.DelaySeconds, GroupID: in.MessageGroupID, DedupID: in.MessageDeduplicationID,
	})
	if err != nil {
		return err
	}
	writeJSON(w, map[string]string{"message_id": res.MessageID, "md5_of_body": res.MD5OfBody, "sequence_number": res.SequenceNumber})
	return nil
}

func (s *Server) actionPurge(w http.ResponseWriter, r *http.Request) error {
	var in struct{}
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	ref := s.adminRef(r)
	if _, err := s.engine.GetQueue(r.Context(), ref); err != nil {
		return err
	}
	if err := s.engine.PurgeQueue(r.Context(), ref); err != nil {
		return err
	}
	writeJSON(w, map[string]bool{"purged": true})
	return nil
}

// AttributesActionJSON is the body of the attributes action and its answer.
type AttributesActionJSON struct {
	Attributes map[string]string `json:"attributes"`
}

func (s *Server) actionSetAttributes(w http.ResponseWriter, r *http.Request) error {
	var in AttributesActionJSON
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	ref := s.adminRef(r)
	if err := s.engine.SetQueueAttributes(r.Context(), ref, in.Attributes); err != nil {
		return err
	}
	attrs, err := s.engine.GetQueueAttributes(r.Context(), ref, []string{"All"})
	if err != nil {
		return err
	}
	writeJSON(w, AttributesActionJSON{Attributes: attrs})
	return nil
}

// MoveTaskActionJSON is the body of the move-task (redrive) action. An
// empty DestinationQueue sends each message back to the queue it was
// dead-lettered from.
type MoveTaskActionJSON struct {
	DestinationQueue string `json:"destination_queue,omitempty"`
	MaxPerSecond     *int   `json:"max_per_second,omitempty"`
}

func (s *Server) actionStartMoveTask(w http.ResponseWriter, r *http.Request) error {
	var in MoveTaskActionJSON
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	ref := s.adminRef(r)
	q, err := s.engine.GetQueue(r.Context(), ref)
	if err != nil {
		return err
	}
	p := engine.StartMessageMoveTaskParams{Region: q.Region, Account: ref.Account, SourceARN: s.engine.QueueARN(q), MaxPerSecond: in.MaxPerSecond}
	if in.DestinationQueue != "" {
		p.DestinationARN = engine.RegionARN(q.Region, ref.Account, in.DestinationQueue)
	}
	handle, err := s.engine.StartMessageMoveTask(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, map[string]string{"task_handle": handle})
	return nil
}

// CancelMoveTaskActionJSON is the body of the cancel action.
type CancelMoveTaskActionJSON struct {
	TaskHandle string `json:"task_handle"`
}

func (s *Server) actionCancelMoveTask(w http.ResponseWriter, r *http.Request) error {
	var in CancelMoveTaskActionJSON
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	if in.TaskHandle == "" {
		return baton.MissingParameter("task_handle")
	}
	// The engine refuses another account's task; cancel only a task of this
	// queue.
	ref := s.adminRef(r)
	tasks, err := s.moveTasks(r.Context(), ref)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(tasks.MoveTasks, func(t MoveTaskJSON) bool { return t.TaskHandle == in.TaskHandle }) {
		return baton.Errorf(baton.ErrResourceNotFound, "Task does not exist.")
	}
	moved, err := s.engine.CancelMessageMoveTask(r.Context(), ref.Region, ref.Account, in.TaskHandle)
	if err != nil {
		return err
	}
	writeJSON(w, map[string]int64{"moved": moved})
	return nil
}
