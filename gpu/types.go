package gpu

// Type is a GPU model with its memory size, the unit in which clouds sell and planners plan.
// The names are shared by the cloud catalog, the planner's profiles and the node agent, so a
// plan made for "A100-40" can be matched to an offering and to a machine.
type Type string

// The GPU types schooner knows. Memory is in the name because it decides what fits.
const (
	V100    Type = "V100-16"
	V100_32 Type = "V100-32"
	T4      Type = "T4-16"
	A10G    Type = "A10G-24"
	L4      Type = "L4-24"
	A100_40 Type = "A100-40"
	A100_80 Type = "A100-80"
	H100    Type = "H100-80"
	H200    Type = "H200-141"
	GH200   Type = "GH200-96"
)

// KnownTypes lists every Type in a stable order.
var KnownTypes = []Type{V100, V100_32, T4, A10G, L4, A100_40, A100_80, H100, H200, GH200}

// ValidName reports whether t can name a GPU type at all: 1 to 64 letters, digits, '-', '_'
// or '.'. A type schooner has no datasheet for (a GPU known only from its profile, such as
// Sailor's RTX-3090) is valid by name; Known says whether schooner also has its figures.
func ValidName(t Type) bool {
	if len(t) == 0 || len(t) > 64 {
		return false
	}
	for _, r := range t {
		ok := r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}

// Known reports whether t is one of KnownTypes.
func Known(t Type) bool {
	for _, k := range KnownTypes {
		if k == t {
			return true
		}
	}
	return false
}
