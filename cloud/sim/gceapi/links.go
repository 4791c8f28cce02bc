package gceapi

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
)

// linkBase is where GCE's selfLinks point. Clients only ever read the last segments of a
// link, so the face keeps Google's host rather than its own address.
const linkBase = "https://www.googleapis.com/compute/v1/"

func zonePath(project, zone string) string { return "projects/" + project + "/zones/" + zone }

func zoneLink(project, zone string) string { return linkBase + zonePath(project, zone) }

func instanceLink(project, zone, name string) string {
	return zoneLink(project, zone) + "/instances/" + name
}

func operationLink(project, zone, name string) string {
	return zoneLink(project, zone) + "/operations/" + name
}

func machineTypeLink(project, zone, mt string) string {
	return zoneLink(project, zone) + "/machineTypes/" + mt
}

func acceleratorTypeLink(project, zone, at string) string {
	return zoneLink(project, zone) + "/acceleratorTypes/" + at
}

// lastSegment is the name at the end of a link or partial path ("zones/z/machineTypes/t"
// and full URLs alike).
func lastSegment(link string) string {
	link = strings.TrimRight(link, "/")
	if i := strings.LastIndex(link, "/"); i >= 0 {
		return link[i+1:]
	}
	return link
}

// segmentAfter returns the path segment that follows key ("zones") in link, or "".
func segmentAfter(link, key string) string {
	parts := strings.Split(link, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == key {
			return parts[i+1]
		}
	}
	return ""
}

// numericID gives every name a stable 63-bit id, as GCE gives every resource a numeric id
// beside its name; a hash keeps the face stateless about ids.
func numericID(kind, name string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s", kind, name)
	return h.Sum64() >> 1
}

// projectNumber is the numeric id the metadata server reports for a project.
func projectNumber(project string) uint64 { return numericID("project", project) % 1_000_000_000_000 }

// nameRE is GCE's rule for resource names (RFC 1035 labels, lowercase).
var nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// labelKeyRE and labelValueRE are GCE's rules for labels (ASCII subset).
var (
	labelKeyRE   = regexp.MustCompile(`^[a-z][-_a-z0-9]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[-_a-z0-9]{0,63}$`)
)
