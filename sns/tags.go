package sns

import "github.com/baton-sqs/baton"

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
