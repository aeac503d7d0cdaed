package sns

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/baton-sqs/baton"
)

// maxTags is how many tags a topic may have.
const maxTags = 50

// checkTags turns a request's tags into a map, refusing a key given twice
// ("Duplicated keys are not allowed.", as AWS), more than 50 tags, and
// keys or values of lengths AWS refuses (keys 1 to 128 characters, values
// up to 256).
func checkTags(tags []Tag) (map[string]string, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		if _, dup := out[t.Key]; dup {
			return nil, invalidParameter("Duplicated keys are not allowed.")
		}
		if t.Key == "" || len([]rune(t.Key)) > 128 || len([]rune(t.Value)) > 256 {
			return nil, invalidParameter("Tags Reason: a tag key is 1 to 128 characters, a value at most 256")
		}
		out[t.Key] = t.Value
	}
	if len(out) > maxTags {
		return nil, baton.Errorf(baton.ErrSNSTagLimitExceeded, "Could not complete request: tag quota of per resource exceeded")
	}
	return out, nil
}

// resourceTopic loads the topic a tagging call names: an unknown one is
// ResourceNotFound (404), not NotFound.
func (s *Service) resourceTopic(ctx context.Context, c Caller, arn string) (*baton.Topic, error) {
	t, err := s.topic(ctx, c, "ResourceArn", arn)
	if baton.IsCode(err, baton.ErrSNSNotFound) {
		return nil, baton.Errorf(baton.ErrSNSResourceNotFound, "Resource does not exist")
	}
	return t, err
}

// TagResource adds tags to a topic, a key given again replacing its
// value; more than 50 tags in all is TagLimitExceeded.
func (s *Service) TagResource(ctx context.Context, c Caller, arn string, tags []Tag) error {
	add, err := checkTags(tags)
	if err != nil {
		return err
	}
	if len(add) == 0 {
		return missing("Tags")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.resourceTopic(ctx, c, arn)
	if err != nil {
		return err
	}
	if t.Tags == nil {
		t.Tags = make(map[string]string, len(add))
	}
	maps.Copy(t.Tags, add)
	if len(t.Tags) > maxTags {
		return baton.Errorf(baton.ErrSNSTagLimitExceeded, "Could not complete request: tag quota of per resource exceeded")
	}
	return s.updateTopic(ctx, t)
}

// UntagResource removes tags from a topic; keys it does not have are no
// error.
func (s *Service) UntagResource(ctx context.Context, c Caller, arn string, keys []string) error {
	if len(keys) == 0 {
		return missing("TagKeys")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.resourceTopic(ctx, c, arn)
	if err != nil {
		return err
	}
	for _, k := range keys {
		delete(t.Tags, k)
	}
	return s.updateTopic(ctx, t)
}

// ListTagsForResource returns a topic's tags, by key.
func (s *Service) ListTagsForResource(ctx context.Context, c Caller, arn string) ([]Tag, error) {
	t, err := s.resourceTopic(ctx, c, arn)
	if err != nil {
		return nil, err
	}
	out := make([]Tag, 0, len(t.Tags))
	for _, k := range slices.Sorted(maps.Keys(t.Tags)) {
		out = append(out, Tag{Key: k, Value: t.Tags[k]})
	}
	return out, nil
}

// updateTopic writes a changed topic.
func (s *Service) updateTopic(ctx context.Context, t *baton.Topic) error {
	if err := s.store.TopicUpdate(ctx, t); errors.Is(err, baton.ErrNotFound) {
		return errTopicNotFound()
	} else if err != nil {
		return storeErr(err, "update topic")
	}
	return nil
}
