package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// ImportSailorNetwork reads Sailor's network measurements under dir/providers:
// intra_node_bandwidths.json (NVLink fits per GPU type and GPUs per node),
// network_coeffs_all_homo.json (inter-node fits), multizone_bandwidths*.json (zone pairs)
// and gcp/communication_cost.json (egress prices). Fields Sailor has no data for are left
// zero; LoadNetwork merges the result over planner.DefaultNetwork.
func ImportSailorNetwork(dir string) (*planner.Network, error) {
	n, _, err := importSailorNetwork(dirSource(dir))
	return n, err
}

// sailorFit is [[a, b, c], peak_bytes_per_s].
type sailorFit []json.RawMessage

func (f sailorFit) link() (planner.Link, error) {
	if len(f) != 2 {
		return planner.Link{}, fmt.Errorf("fit has %d elements, want [[a, b, c], peak]", len(f))
	}
	var coeffs []float64
	var peak float64
	if err := json.Unmarshal(f[0], &coeffs); err != nil || len(coeffs) != 3 {
		return planner.Link{}, fmt.Errorf("fit coefficients %s are not three numbers", f[0])
	}
	if err := json.Unmarshal(f[1], &peak); err != nil || peak <= 0 {
		return planner.Link{}, fmt.Errorf("fit peak %s is not a positive number", f[1])
	}
	return planner.Link{Coeffs: [3]float64{coeffs[0], coeffs[1], coeffs[2]}, PeakBps: peak}, nil
}

// sailorLinks converts {gpu: {gpusPerNode: fit}}.
func sailorLinks(file string, raw map[string]map[string]sailorFit, out map[gpu.Type]map[int]planner.Link, notes *[]string) error {
	for _, name := range sortedKeys(raw) {
		g, ok := sailorGPU(name)
		if !ok {
			*notes = append(*notes, fmt.Sprintf("%s: GPU %s skipped", file, name))
			continue
		}
		for _, countKey := range sortedKeys(raw[name]) {
			count, err := strconv.Atoi(countKey)
			if err != nil || count <= 0 {
				return fileErrorf(file, "%s: GPUs per node %q is not a positive integer", name, countKey)
			}
			l, err := raw[name][countKey].link()
			if err != nil {
				return fileErrorf(file, "%s %d GPUs per node: %v", name, count, err)
			}
			if out[g] == nil {
				out[g] = map[int]planner.Link{}
			}
			out[g][count] = l
		}
	}
	return nil
}

func importSailorNetwork(src sailorSource) (*planner.Network, []string, error) {
	var notes []string
	n := &planner.Network{
		IntraNode: map[gpu.Type]map[int]planner.Link{},
		InterNode: map[gpu.Type]map[int]planner.Link{},
		Zones:     map[string]map[string]planner.Link{},
		Egress:    map[string]map[string]float64{},
	}

	var intra map[string]map[string]sailorFit
	if err := src.readJSON(sailorIntraNode, &intra); err != nil {
		return nil, nil, err
	}
	if err := sailorLinks(src.name(sailorIntraNode), intra, n.IntraNode, &notes); err != nil {
		return nil, nil, err
	}

	var coeffs struct {
		Inter map[string]map[string]sailorFit `json:"inter"`
	}
	if err := src.readJSON(sailorNetCoeffs, &coeffs); err != nil {
		return nil, nil, err
	}
	if coeffs.Inter == nil {
		return nil, nil, fileErrorf(src.name(sailorNetCoeffs), `no "inter" section`)
	}
	if err := sailorLinks(src.name(sailorNetCoeffs), coeffs.Inter, n.InterNode, &notes); err != nil {
		return nil, nil, err
	}

	if err := sailorZones(src, n, &notes); err != nil {
		return nil, nil, err
	}

	var cost map[string]map[string]float64
	if err := src.readJSON(sailorCommCost, &cost); err != nil {
		return nil, nil, err
	}
	for _, a := range sortedKeys(cost) {
		for _, b := range sortedKeys(cost[a]) {
			v := cost[a][b]
			if bad(v) {
				return nil, nil, fileErrorf(src.name(sailorCommCost), "%s -> %s costs %v", a, b, v)
			}
			if a == b {
				continue
			}
			if n.Egress[a] == nil {
				n.Egress[a] = map[string]float64{}
			}
			n.Egress[a][b] = v
		}
	}
	return n, notes, nil
}

// sailorZones fills n.Zones from the multizone files: zone → GPU → GPUs per node → zone →
// GPU → GPUs per node → fit. A planner.Network keeps one link per zone pair, so each pair
// gets its fastest measured fit (by peak): the path's capacity, which Between then caps by
// each side's machine link. Same-zone entries are skipped (inter-node fits cover them), and
// so are entries copied from a same-zone fit, which Sailor's heterogeneous file uses as
// placeholders for pairs it did not measure. A missing file is skipped; both missing is
// an error.
func sailorZones(src sailorSource, n *planner.Network, notes *[]string) error {
	type entry struct {
		from, to string
		link     planner.Link
	}
	var all []entry
	sameZone := map[planner.Link]bool{}
	found := 0
	for _, rel := range []string{sailorMultizone, sailorMultizoneHt} {
		var raw map[string]map[string]map[string]map[string]map[string]map[string]sailorFit
		if err := src.readJSON(rel, &raw); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		found++
		file := src.name(rel)
		for _, za := range sortedKeys(raw) {
			for _, ga := range sortedKeys(raw[za]) {
				for _, ca := range sortedKeys(raw[za][ga]) {
					for _, zb := range sortedKeys(raw[za][ga][ca]) {
						for _, gb := range sortedKeys(raw[za][ga][ca][zb]) {
							for _, cb := range sortedKeys(raw[za][ga][ca][zb][gb]) {
								l, err := raw[za][ga][ca][zb][gb][cb].link()
								if err != nil {
									return fileErrorf(file, "%s %s %s -> %s %s %s: %v", za, ga, ca, zb, gb, cb, err)
								}
								if za == zb {
									sameZone[l] = true
									continue
								}
								all = append(all, entry{from: za, to: zb, link: l})
							}
						}
					}
				}
			}
		}
	}
	if found == 0 {
		return fileErrorf(src.name(sailorMultizone), "missing (and so is %s)", sailorMultizoneHt)
	}
	placeholders := 0
	for _, e := range all {
		if sameZone[e.link] {
			placeholders++
			continue
		}
		if n.Zones[e.from] == nil {
			n.Zones[e.from] = map[string]planner.Link{}
		}
		if cur, ok := n.Zones[e.from][e.to]; !ok || e.link.PeakBps > cur.PeakBps {
			n.Zones[e.from][e.to] = e.link
		}
	}
	if placeholders > 0 {
		*notes = append(*notes, fmt.Sprintf("multizone: %d cross-zone entries equal a same-zone fit (placeholders), skipped", placeholders))
	}
	return nil
}
