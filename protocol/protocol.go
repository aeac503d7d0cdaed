// Package protocol declares SQS operations once, so that each wire codec
// (protocol/awsjson, protocol/awsquery) serves all of them generically: an
// operation is a name, a request type, a response type and a handler.
package protocol

import "context"

// Operation is one SQS action.
type Operation struct {
	Name string
	// NewInput returns a pointer to a zero request struct of protocol/wire.
	NewInput func() any
	// HasOutput is false for actions whose response has no result members;
	// the Query protocol then omits the <Result> element.
	HasOutput bool
	// Call runs the action on a decoded request and returns the response (a
	// pointer to a protocol/wire struct) or an error, a *baton.Error for
	// anything the client may see.
	Call func(ctx context.Context, in any) (any, error)
}

// NoOutput is the response type of actions that return nothing.
type NoOutput struct{}

// Op declares an operation from a typed handler.
func Op[In, Out any](name string, f func(context.Context, *In) (*Out, error)) Operation {
	_, none := any((*Out)(nil)).(*NoOutput)
	return Operation{
		Name:      name,
		NewInput:  func() any { return new(In) },
		HasOutput: !none,
		Call: func(ctx context.Context, in any) (any, error) {
			out, err := f(ctx, in.(*In))
			if err != nil {
				return nil, err
			}
			return out, nil
		},
	}
}

// Table indexes operations by name.
type Table map[string]Operation

// NewTable builds a table from operations.
func NewTable(ops ...Operation) Table {
	t := make(Table, len(ops))
	for _, op := range ops {
		t[op.Name] = op
	}
	return t
}
