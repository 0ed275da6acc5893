package models

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"
)

const maxMediaURLLength = 2048

// checkMedia validates customData.mediaUrl and mediaContentType: a type is required with
// a URL; the URL is an http(s) link (stored, checked later by the worker) or a base64 data URI whose
// declared type equals mediaContentType, whose payload decodes, fits maxBytes (else PAYLOAD_TOO_LARGE),
// and whose sniffed content is of that type. It returns the URL and the normalized media type.
func checkMedia(rawURL, contentType string, maxBytes int) (string, string, error) {
	rawURL, contentType = strings.TrimSpace(rawURL), strings.TrimSpace(contentType)
	if rawURL == "" {
		if contentType != "" {
			return "", "", Errorf(CodeValidation, "customData.mediaContentType is given without customData.mediaUrl")
		}
		return "", "", nil
	}
	if contentType == "" {
		return "", "", Errorf(CodeValidation, "customData.mediaContentType is required when customData.mediaUrl is given")
	}
	if !utf8.ValidString(rawURL) || strings.ContainsRune(rawURL, 0) {
		// JSON decoding already replaces invalid UTF-8, but the database would refuse it anyway.
		return "", "", Errorf(CodeValidation, "customData.mediaUrl must be valid UTF-8 text without NUL characters")
	}
	declared, _, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.Contains(declared, "/") {
		return "", "", Errorf(CodeValidation, "customData.mediaContentType %q is not a MIME type such as image/jpeg", truncate(contentType, 64))
	}

	if !strings.HasPrefix(strings.ToLower(rawURL), "data:") {
		if len(rawURL) > maxMediaURLLength {
			return "", "", Errorf(CodeValidation, "customData.mediaUrl must be at most %d characters", maxMediaURLLength)
		}
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", "", Errorf(CodeValidation, "customData.mediaUrl must be an http(s) link or a data URI (data:<type>;base64,<data>)")
		}
		return rawURL, declared, nil
	}

	header, encoded, ok := strings.Cut(rawURL[len("data:"):], ",")
	uriType, isBase64 := strings.CutSuffix(header, ";base64")
	if !ok || !isBase64 {
		return "", "", Errorf(CodeValidation, "customData.mediaUrl must be a data URI of the form data:<type>;base64,<data>")
	}
	if uriType, _, err = mime.ParseMediaType(uriType); err != nil || uriType != declared {
		return "", "", Errorf(CodeValidation, "customData.mediaUrl declares type %q but customData.mediaContentType is %q", truncate(header, 64), declared)
	}
	// Reject before decoding when the encoded size already says the file is too large.
	if base64.StdEncoding.DecodedLen(len(encoded)) > maxBytes+2 {
		return "", "", Errorf(CodeTooLarge, "embedded media is larger than %d bytes: host the file and send a link", maxBytes)
	}
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", "", Errorf(CodeValidation, "customData.mediaUrl is not valid base64 data")
	}
	switch fault, detected := checkMediaData(data, declared, maxBytes); fault {
	case mediaEmpty:
		return "", "", Errorf(CodeValidation, "customData.mediaUrl holds no data")
	case mediaTooLarge:
		return "", "", Errorf(CodeTooLarge, "embedded media is larger than %d bytes: host the file and send a link", maxBytes)
	case mediaOtherType:
		return "", "", Errorf(CodeValidation, "customData.mediaContentType is %s but the data is %s", declared, detected)
	}
	return rawURL, declared, nil
}

// mediaFault is what checkMediaData finds wrong with a media file.
type mediaFault int

const (
	mediaSound     mediaFault = iota
	mediaEmpty                // no bytes at all
	mediaTooLarge             // more than the limit (MAX_MEDIA_BYTES)
	mediaOtherType            // the sniffed content is not of the declared type
)

// checkMediaData is the rule every media file stored with a message obeys, whether a client embedded
// it (a data URI, checkMedia) or the worker fetched it from a provider (WhatsApp media, EmbedMedia): it
// holds data, at most maxBytes of it, and its sniffed content is of the declared type. It returns what
// is wrong (mediaSound when nothing is) and the sniffed type.
func checkMediaData(data []byte, declared string, maxBytes int) (mediaFault, string) {
	switch {
	case len(data) == 0:
		return mediaEmpty, ""
	case len(data) > maxBytes:
		return mediaTooLarge, ""
	}
	detected := mimetype.Detect(data)
	if !isOfType(detected, declared) {
		return mediaOtherType, detected.String()
	}
	return mediaSound, detected.String()
}

// EmbedMedia checks a media file the worker fetched for a message (WhatsApp media, which only the
// provider's API serves) by the rule embedded media obey, and returns it as the data URI to store as
// the message's mediaUrl, with its media type: declared (a MIME type as stored in mediaContentType), or
// the sniffed type when declared is a range such as image/*. When the file breaks the rule, problem says
// how, worded as the worker's check of a media link words it ("type mismatch: ..."), and the other
// results are empty.
func EmbedMedia(data []byte, declared string, maxBytes int) (dataURI, mediaType, problem string) {
	fault, detected := checkMediaData(data, declared, maxBytes)
	switch fault {
	case mediaEmpty:
		return "", "", "empty file"
	case mediaTooLarge:
		return "", "", fmt.Sprintf("too large: the file is larger than %d bytes", maxBytes)
	case mediaOtherType:
		return "", "", MediaMismatch(declared, detected)
	}
	mediaType = declared
	if strings.HasSuffix(declared, "/*") {
		mediaType, _, _ = mime.ParseMediaType(detected) // "text/plain; charset=utf-8" is stored as text/plain
	}
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data), mediaType, ""
}

// MediaMismatch is the result of a media check whose file is not of the declared type.
func MediaMismatch(declared, detected string) string {
	return fmt.Sprintf("type mismatch: declared %s, the file is %s", declared, detected)
}

// IsMediaLink reports whether a stored media URL is a link (checked later by the worker) rather than
// embedded data.
func IsMediaLink(mediaURL string) bool {
	return mediaURL != "" && !strings.HasPrefix(strings.ToLower(mediaURL), "data:")
}

// MediaMatches sniffs the start of a file and reports its detected type and whether it is of the
// declared type.
func MediaMatches(head []byte, declared string) (string, bool) {
	detected := mimetype.Detect(head)
	return detected.String(), isOfType(detected, declared)
}

// isOfType reports whether sniffed content is of the declared type or a more specific kind of it
// (an .xlsx is a zip; anything is application/octet-stream). A declared range such as image/* (what
// Messenger and Instagram say of an attachment) matches every type under it.
func isOfType(detected *mimetype.MIME, declared string) bool {
	if major, ok := strings.CutSuffix(declared, "/*"); ok {
		for m := detected; m != nil; m = m.Parent() {
			if strings.HasPrefix(m.String(), major+"/") {
				return true
			}
		}
		return false
	}
	for m := detected; m != nil; m = m.Parent() {
		if m.Is(declared) {
			return true
		}
	}
	return false
}
