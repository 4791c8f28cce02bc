package store

import (
	"context"
	"fmt"
)

// Opener opens a store URL. Callers hold one as a dependency so tests can hand out fakes;
// the zero value opens real stores with Open.
type Opener func(ctx context.Context, url string) (Store, error)

// Open opens url with o, or with the package's Open when o is nil, and names the URL in the
// error.
func (o Opener) Open(ctx context.Context, url string) (Store, error) {
	open := o
	if open == nil {
		open = func(ctx context.Context, url string) (Store, error) { return Open(ctx, url) }
	}
	st, err := open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoint store %s: %w", url, err)
	}
	return st, nil
}
