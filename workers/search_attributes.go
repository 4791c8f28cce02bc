package workers

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// SearchAttributes are the custom attributes schooner keeps current on its workflows so the
// Temporal UI and `temporal workflow list --query` can list and filter jobs.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	"SchoonerPhase":    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"SchoonerCostUSD":  enumspb.INDEXED_VALUE_TYPE_DOUBLE,
	"SchoonerGPUs":     enumspb.INDEXED_VALUE_TYPE_INT,
	"SchoonerZones":    enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
	"SchoonerProgress": enumspb.INDEXED_VALUE_TYPE_DOUBLE,
}

// EnsureSearchAttributes registers schooner's attributes in namespace. Attributes that
// already exist with the right type are fine; one that exists with another type is an
// error, since workflows would fail to upsert it later.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	_, err := AddSearchAttributes(ctx, c, namespace)
	return err
}

// AddSearchAttributes is EnsureSearchAttributes that also says whether it added any: the
// server's services see new attributes only after they reread the namespace.
func AddSearchAttributes(ctx context.Context, c client.Client, namespace string) (bool, error) {
	existing, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return false, fmt.Errorf("listing search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range SearchAttributes {
		have, ok := existing.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case have != typ:
			return false, fmt.Errorf("search attribute %s exists with type %s, schooner needs %s", name, have, typ)
		}
	}
	if len(missing) == 0 {
		return false, nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return false, fmt.Errorf("adding search attributes: %w", err)
	}
	return true, nil
}
