package gcp

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// GCE resource names and label keys and values are at most 63 characters of lowercase
// letters, digits and dashes (labels also allow underscores); names and keys start with a
// letter. Job ids and tags come from users, so they are folded into that alphabet rather
// than rejected.
const maxNameLen = 63

// instanceName is "<prefix>-<job>-<token>-<n>". The token (6 hex digits) keeps names of
// two Create calls for the same job apart; it is derived from the client token when there
// is one, so a retried Create asks for the same names.
func instanceName(prefix, jobID, clientToken string, n int) string {
	tok := tokenHex(clientToken, 6)
	suffix := "-" + tok + "-" + strconv.Itoa(n)
	head := foldName(prefix)
	if head == "" || head[0] < 'a' || head[0] > 'z' {
		head = "s" + head
	}
	if job := foldName(jobID); job != "" {
		head += "-" + job
	}
	if len(head)+len(suffix) > maxNameLen {
		head = strings.TrimRight(head[:maxNameLen-len(suffix)], "-")
	}
	return head + suffix
}

// foldName lowercases s and turns every run of characters GCE names do not allow into one
// dash, trimming dashes at the ends.
func foldName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// labelValue folds v into a valid label value: lowercase letters, digits, '-' and '_',
// at most 63 characters. Distinct tags may fold to the same value; List filters on the
// folded form, so what was written is what is found.
func labelValue(v string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(v) {
		switch {
		case (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' || r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= maxNameLen {
			break
		}
	}
	return b.String()
}

// labelKey folds k like labelValue and makes it start with a letter.
func labelKey(k string) string {
	v := labelValue(k)
	if v == "" || v[0] < 'a' || v[0] > 'z' {
		v = "k" + v
	}
	if len(v) > maxNameLen {
		v = v[:maxNameLen]
	}
	return v
}

// tokenHex is n hex digits derived from token, or random ones without a token.
func tokenHex(token string, n int) string {
	var b []byte
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		b = sum[:]
	} else {
		b = make([]byte, 16)
		_, _ = rand.Read(b)
	}
	return hex.EncodeToString(b)[:n]
}

// requestID turns a client token, the VM's index and the insert attempt into the UUID
// GCE's requestId wants, so a retried Create is recognised by GCE (for at least an hour)
// instead of creating a second VM. Without a client token there is nothing to recognise:
// no request id.
func requestID(clientToken string, n, attempt int) string {
	if clientToken == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(clientToken + "/" + strconv.Itoa(n) + "/" + strconv.Itoa(attempt)))
	sum[6] = sum[6]&0x0f | 0x50 // version 5 style: name-based
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(sum[:16])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// lastSegment is the name at the end of a GCE link ("zones/z/machineTypes/t" or a URL).
func lastSegment(link string) string {
	link = strings.TrimRight(link, "/")
	if i := strings.LastIndex(link, "/"); i >= 0 {
		return link[i+1:]
	}
	return link
}
