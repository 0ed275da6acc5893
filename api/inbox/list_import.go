package inbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/nyaruka/phonenumbers"
	"github.com/redis/go-redis/v9"
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"

	"funnelchat/models"
	"funnelchat/models/rules"
)

// Importing a CSV file into a list in two steps (README, "The inbox"; docs/contacts.md): the upload
// shows the file's first rows with the columns the API's import would read (models.GuessCSVMapping)
// as choices the person can change, and the country that phones without a country code are read in;
// the import then reads the file with the columns chosen (models.ParseContactCSVMapped) and adds its
// contacts as POST /v1/lists/{id}/import does (App.ImportContacts), and its page shows the totals,
// each invalid row's line and reason, and the invalid rows as a CSV download.
//
// Between the two steps the file is kept in Redis, under a random token bound to the account, the
// user and the list, for importTTL. Redis, because the api runs as several processes (the import may
// reach another one than the upload) and its keys expire by themselves, so a file whose import was
// never confirmed leaves nothing behind; not the database, which keeps what the service must not lose,
// not a half-finished upload; and not a second upload in step 2, which would make the person pick
// the file again and could import another file than the one previewed. It is bounded: a file is at
// most MAX_BODY_BYTES (the request's limit, as for the API's import), each user has one file kept at
// a time (a new upload drops the previous one), and each goes after importTTL without use. After the
// import the file stays until then for the invalid rows' download.

// importTTL is how long an uploaded file waits for its import, from its last use.
const importTTL = 30 * time.Minute

// claimTTL is how long a press of Import keeps a second one from importing the file again: longer than
// an import request may run (the api's request deadline), short enough that a process stopped during
// an import does not keep the file from being imported for long.
const claimTTL = 2 * time.Minute

// previewRows is how many of the file's rows the first step shows.
const previewRows = 5

// shownInvalidRows is how many invalid rows the result page lists (the download has them all).
const shownInvalidRows = 200

// pendingImport is an uploaded file as Redis keeps it between the two steps: who uploaded it for
// which list, the file, and once imported what the import did.
type pendingImport struct {
	Meta   importMeta
	File   []byte
	Result *importOutcome
	key    string
}

type importMeta struct {
	AccountID string `json:"accountId"`
	UserID    string `json:"userId"`
	ListID    string `json:"listId"`
	FileName  string `json:"fileName"`
}

// importOutcome is what the import did, as its page shows it.
type importOutcome struct {
	models.ImportResult
	// Country is the country phones without a country code were read in ("" for none).
	Country string `json:"country"`
}

// importKey is the Redis key of the user's upload with token: a hash of the token, so that the key
// does not give the token away. An upload's keys are the user's (inbox:import:{<user id>}:...): its
// hash tag puts them in one slot on Redis Cluster, which keepUpload's transaction needs. (An upload
// kept by an api of the release before, under inbox:import:<hash>, is not found by this one: its user
// uploads the file again.)
func importKey(userID, token string) string {
	sum := sha256.Sum256([]byte(token))
	return importPrefix(userID) + hex.EncodeToString(sum[:16])
}

// importUserKey holds the key of the user's one kept upload.
func importUserKey(userID string) string { return importPrefix(userID) + "latest" }

func importPrefix(userID string) string { return "inbox:import:{" + userID + "}:" }

// redisTimeout bounds one Redis call of the import.
const redisTimeout = 5 * time.Second

// keepUpload stores the file for the session's user and returns its token; the user's previous
// upload, if any, is dropped.
func (h *Handler) keepUpload(ctx context.Context, meta importMeta, file []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	token := newFormToken()
	key := importKey(meta.UserID, token)
	body, err := json.Marshal(meta)
	if err != nil {
		return "", err
	}
	prev, err := h.redis.Get(ctx, importUserKey(meta.UserID)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", models.Errorf(models.CodeUnavailable, "keep upload: %v", err)
	}
	_, err = h.redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if strings.HasPrefix(prev, importPrefix(meta.UserID)) {
			p.Del(ctx, prev, prev+":claim")
		}
		p.HSet(ctx, key, "meta", body, "file", file)
		p.Expire(ctx, key, importTTL)
		p.Set(ctx, importUserKey(meta.UserID), key, importTTL)
		return nil
	})
	if err != nil {
		return "", models.Errorf(models.CodeUnavailable, "keep upload: %v", err)
	}
	return token, nil
}

// loadUpload returns the upload of token if it is the session's user's for the list of the path, with
// its file when withFile; nil when there is none (expired, another's, or never made). Each use keeps
// it importTTL longer.
func (h *Handler) loadUpload(c *fiber.Ctx, withFile bool) (*pendingImport, error) {
	token := c.Params("token")
	if token == "" || len(token) > 64 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), redisTimeout)
	defer cancel()
	sess := sessionOf(c)
	key := importKey(sess.UserID, token)
	fields := []string{"meta", "result"}
	if withFile {
		fields = append(fields, "file")
	}
	vals, err := h.redis.HMGet(ctx, key, fields...).Result()
	if err != nil {
		return nil, models.Errorf(models.CodeUnavailable, "load upload: %v", err)
	}
	meta, _ := vals[0].(string)
	p := &pendingImport{key: key}
	if meta == "" || json.Unmarshal([]byte(meta), &p.Meta) != nil {
		return nil, nil
	}
	if p.Meta.AccountID != sess.AccountID || p.Meta.UserID != sess.UserID || p.Meta.ListID != c.Params("id") {
		return nil, nil
	}
	if result, _ := vals[1].(string); result != "" {
		p.Result = new(importOutcome)
		if json.Unmarshal([]byte(result), p.Result) != nil {
			p.Result = nil
		}
	}
	if withFile {
		file, _ := vals[2].(string)
		p.File = []byte(file)
	}
	_, err = h.redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Expire(ctx, key, importTTL)
		p.Expire(ctx, importUserKey(sess.UserID), importTTL)
		return nil
	})
	if err != nil {
		h.log.WarnContext(ctx, "upload's time not extended", "error", err.Error())
	}
	return p, nil
}

// megabytes writes a size in bytes as the pages say it ("10 MB", "1.5 MB", "64 KB").
func megabytes(n int) string {
	if n < 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 0, 64) + " KB"
	}
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64), ".0") + " MB"
}

// TooLarge is the inbox's answer to a request whose body is over MAX_BODY_BYTES (limit), which the HTTP
// server refuses before any handler runs: a page saying so (413), where the API answers
// PAYLOAD_TOO_LARGE. The only such form of the inbox is the import's upload.
func TooLarge(c *fiber.Ctx, limit int) error {
	setSecurityHeaders(c)
	text := "The file is larger than the " + megabytes(limit) + " the inbox takes in one upload. Split it into smaller files and import each, or import it through the API."
	return renderPage(c, fiber.StatusRequestEntityTooLarge, "problem", inboxView{Title: "File too large",
		Data: problemView{Heading: "File too large", Text: text}})
}

// uploadImport: POST /inbox/lists/{id}/import (multipart, field file) reads the file as the import
// will, keeps it (keepUpload) and goes to its preview (303). A file that cannot be read as a contact
// file comes back on the list's page with why (422).
func (h *Handler) uploadImport(c *fiber.Ctx) error {
	sess := sessionOf(c)
	listID := strings.Clone(c.Params("id"))
	if _, err := h.store.ListByID(c.UserContext(), sess.AccountID, listID); err != nil {
		return h.listMissing(c, err)
	}
	refuse := func(problem string) error {
		return h.renderList(c, fiber.StatusUnprocessableEntity, listPageView{Upload: []string{problem}})
	}
	form, err := c.MultipartForm()
	if err != nil || len(form.File["file"]) != 1 {
		return refuse("Choose a CSV file to upload.")
	}
	fh := form.File["file"][0]
	f, err := fh.Open()
	if err != nil {
		return h.inboxFailure(c, err)
	}
	defer f.Close()
	file, err := io.ReadAll(io.LimitReader(f, int64(h.cfg.MaxBodyBytes)+1))
	switch {
	case err != nil:
		return h.inboxFailure(c, err)
	case len(file) > h.cfg.MaxBodyBytes:
		return refuse("The file is larger than " + megabytes(h.cfg.MaxBodyBytes) + ": split it into smaller files.")
	case len(bytes.TrimSpace(file)) == 0:
		return refuse("The file " + fh.Filename + " is empty: it needs a header row and one contact per row.")
	}
	if _, err := models.PreviewContactCSV(bytes.NewReader(file), previewRows); err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return refuse(fh.Filename + ": " + sentence(models.ErrorMessage(err)))
		}
		return h.inboxFailure(c, err)
	}
	name := strings.ToValidUTF8(fh.Filename, "\uFFFD")
	if r := []rune(name); len(r) > 200 {
		name = string(r[:200])
	}
	token, err := h.keepUpload(c.UserContext(), importMeta{AccountID: sess.AccountID, UserID: sess.UserID, ListID: listID, FileName: name}, file)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	return c.Redirect(listPath(listID)+"/import/"+token, fiber.StatusSeeOther)
}

// importView is the import's preview (step 1) and result (step 2).
type importView struct {
	List     *models.List
	ListPath string
	Action   string
	FileName string
	Preview  *models.CSVPreview
	// Mapping is the field chosen for each column (the guess at first, then as the person chose);
	// Country the country phones without a country code are read in.
	Mapping models.CSVMapping
	Country string
	// AccountCountry is the account's own (its default country, else its time zone's; "" for none).
	AccountCountry string
	Errors         []string
	Result         *importOutcome
	Token          string
}

// importField is a choice of the column selects.
type importField struct{ Value, Label string }

// importFields are the columns' choices, in the order the selects offer them.
var importFields = []importField{
	{"", "Not imported"}, {"phone", "Phone"}, {"first_name", "First name"}, {"last_name", "Last name"},
	{"email", "Email"}, {"time_zone", "Time zone"},
}

// Fields are the column selects' choices.
func (v importView) Fields() []importField { return importFields }

// Chosen is the field chosen for column i.
func (v importView) Chosen(i int) string {
	if i < len(v.Mapping) {
		return v.Mapping[i]
	}
	return ""
}

// Column is column i's name for the page ("Column 3" for an unnamed one).
func (v importView) Column(i int) string {
	if name := v.Preview.Header[i]; name != "" {
		return name
	}
	return "Column " + strconv.Itoa(i+1)
}

// Samples are column i's values in the first rows (rows that are not valid CSV left out).
func (v importView) Samples(i int) []string {
	var out []string
	for _, r := range v.Preview.Rows {
		if r.Problem == "" && strings.TrimSpace(r.Fields[i]) != "" {
			out = append(out, r.Fields[i])
		}
	}
	return out
}

// Countries are the country select's choices.
func (v importView) Countries() []countryOption { return countryOptions() }

// ShownErrors are the invalid rows the result page lists; MoreErrors how many it leaves to the download.
func (v importView) ShownErrors() []models.CSVRowError {
	return v.Result.Errors[:min(len(v.Result.Errors), shownInvalidRows)]
}
func (v importView) MoreErrors() int { return len(v.Result.Errors) - len(v.ShownErrors()) }

// countryOption is a country of the select: its code and English name.
type countryOption struct{ Code, Name string }

// countryOptions are the countries a default country can be (those with a telephone numbering plan,
// as rules.Country accepts them), by name.
var countryOptions = sync.OnceValue(func() []countryOption {
	namer := display.English.Regions()
	var out []countryOption
	for code := range phonenumbers.GetSupportedRegions() {
		if _, err := rules.Country("country", code); err != nil {
			continue
		}
		name := code
		if r, err := language.ParseRegion(code); err == nil {
			if n := namer.Name(r); n != "" {
				name = n
			}
		}
		out = append(out, countryOption{Code: code, Name: name})
	}
	slices.SortFunc(out, func(a, b countryOption) int { return strings.Compare(a.Name, b.Name) })
	return out
})

// uploadGone is the answer for an upload that is no longer kept (or was never the user's): the list's
// page with the upload form, saying so (410).
func (h *Handler) uploadGone(c *fiber.Ctx) error {
	return h.renderList(c, fiber.StatusGone, listPageView{Upload: []string{
		"That upload is no longer kept: a file waits " + strconv.Itoa(int(importTTL/time.Minute)) +
			" minutes for its import (or the link is not yours). Upload the file again.",
	}})
}

// importPreview: GET /inbox/lists/{id}/import/{token} is the first step: the file's first rows, a
// select per column with the guessed field, and the country.
func (h *Handler) importPreview(c *fiber.Ctx) error {
	p, err := h.loadUpload(c, true)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	if p == nil {
		return h.uploadGone(c)
	}
	v, err := h.importViewOf(c, p)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	v.Mapping = v.Preview.Guess
	if v.Country, err = h.store.PhoneRegion(c.UserContext(), p.Meta.AccountID); err != nil {
		return h.inboxFailure(c, err)
	}
	return h.renderImport(c, fiber.StatusOK, v)
}

// importViewOf starts the import page's data for the upload p.
func (h *Handler) importViewOf(c *fiber.Ctx, p *pendingImport) (importView, error) {
	ctx := c.UserContext()
	l, err := h.store.ListByID(ctx, p.Meta.AccountID, p.Meta.ListID)
	if err != nil {
		return importView{}, err
	}
	v := importView{List: l, ListPath: listPath(l.ID), Action: listPath(l.ID) + "/import/" + c.Params("token"),
		FileName: p.Meta.FileName, Result: p.Result, Token: c.Params("token")}
	if p.File != nil {
		if v.Preview, err = models.PreviewContactCSV(bytes.NewReader(p.File), previewRows); err != nil {
			return v, err
		}
	}
	if v.AccountCountry, err = h.store.PhoneRegion(ctx, p.Meta.AccountID); err != nil {
		return v, err
	}
	return v, nil
}

func (h *Handler) renderImport(c *fiber.Ctx, status int, v importView) error {
	return h.render(c, status, "list_import", h.view(c, "Import into "+v.List.Name, "lists", v))
}

// runImport: POST /inbox/lists/{id}/import/{token} {col0..colN, country} is the second step: the file
// is imported with the columns and country chosen, once (a second press finds the first's result),
// and the answer goes to the result (303). A refused choice comes back with what was chosen and every
// reason (422); the file stays kept.
func (h *Handler) runImport(c *fiber.Ctx) error {
	p, err := h.loadUpload(c, true)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	if p == nil {
		return h.uploadGone(c)
	}
	resultPath := listPath(p.Meta.ListID) + "/import/" + c.Params("token") + "/result"
	if p.Result != nil {
		return c.Redirect(resultPath, fiber.StatusSeeOther)
	}
	v, err := h.importViewOf(c, p)
	if err != nil {
		return h.listMissing(c, err)
	}
	v.Mapping = make(models.CSVMapping, len(v.Preview.Header))
	for i := range v.Mapping {
		v.Mapping[i] = strings.Clone(c.FormValue("col" + strconv.Itoa(i)))
	}
	v.Country = strings.Clone(strings.TrimSpace(c.FormValue("country")))
	for _, problem := range v.Mapping.Problems(v.Preview.Header) {
		v.Errors = append(v.Errors, sentence(problem))
	}
	if v.Country != "" {
		if code, err := rules.Country("country", v.Country); err != nil {
			v.Errors = append(v.Errors, "Choose the country from the list, or none.")
		} else {
			v.Country = code
		}
	}
	if len(v.Errors) > 0 {
		return h.renderImport(c, fiber.StatusUnprocessableEntity, v)
	}

	ctx := c.UserContext()
	claimed, err := h.redis.SetNX(ctx, p.key+":claim", sessionOf(c).UserID, claimTTL).Result()
	if err != nil {
		return h.inboxFailure(c, models.Errorf(models.CodeUnavailable, "claim import: %v", err))
	}
	if !claimed {
		v.Errors = []string{"This file is being imported already. Reload the page in a moment to see the result."}
		return h.renderImport(c, fiber.StatusConflict, v)
	}
	release := func() { _ = h.redis.Del(context.WithoutCancel(ctx), p.key+":claim").Err() }
	file, err := models.ParseContactCSVMapped(bytes.NewReader(p.File), v.Country, v.Mapping)
	if err != nil {
		release()
		if models.ErrorCode(err) == models.CodeValidation {
			v.Errors = []string{sentence(models.ErrorMessage(err))}
			return h.renderImport(c, fiber.StatusUnprocessableEntity, v)
		}
		return h.inboxFailure(c, err)
	}
	res, err := h.app.ImportContacts(ctx, p.Meta.AccountID, p.Meta.ListID, file)
	if err != nil {
		release()
		return h.listMissing(c, err)
	}
	v.Result = &importOutcome{ImportResult: *res, Country: v.Country}
	body, err := json.Marshal(v.Result)
	if err == nil {
		err = h.redis.HSet(ctx, p.key, "result", body).Err()
	}
	if err != nil {
		// The contacts are imported: the result is shown in this answer rather than lost.
		h.log.WarnContext(ctx, "import result not kept; shown in the answer", "error", err.Error())
		return h.renderImport(c, fiber.StatusOK, v)
	}
	return c.Redirect(resultPath, fiber.StatusSeeOther)
}

// importResult: GET /inbox/lists/{id}/import/{token}/result shows what the import did: the totals and
// each invalid row's line and reason, with the invalid rows' download.
func (h *Handler) importResult(c *fiber.Ctx) error {
	p, err := h.loadUpload(c, false)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	if p == nil {
		return h.uploadGone(c)
	}
	if p.Result == nil {
		return c.Redirect(listPath(p.Meta.ListID)+"/import/"+c.Params("token"), fiber.StatusSeeOther)
	}
	v, err := h.importViewOf(c, p)
	if err != nil {
		return h.listMissing(c, err)
	}
	return h.renderImport(c, fiber.StatusOK, v)
}

// invalidRowsCSV: GET /inbox/lists/{id}/import/{token}/invalid.csv downloads the rows the import did
// not take, as they were in the file (its header's columns), each followed by its line and the
// reason, so that they can be corrected and imported again (the two added columns are not read then).
// A row that was not valid CSV has its first line, as written, in the first column.
func (h *Handler) invalidRowsCSV(c *fiber.Ctx) error {
	p, err := h.loadUpload(c, true)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	if p == nil || p.File == nil {
		return h.uploadGone(c)
	}
	if p.Result == nil {
		return c.Redirect(listPath(p.Meta.ListID)+"/import/"+c.Params("token"), fiber.StatusSeeOther)
	}
	reasons := make(map[int]string, len(p.Result.Errors))
	for _, e := range p.Result.Errors {
		reasons[e.Row] = e.Error
	}
	var buf bytes.Buffer
	out := csv.NewWriter(&buf)
	width := 0
	err = models.ScanContactCSV(bytes.NewReader(p.File), func(h models.CSVRecord) error {
		width = len(h.Fields)
		return out.Write(append(slices.Clone(h.Fields), "line", "error"))
	}, func(r models.CSVRecord) error {
		reason, ok := reasons[r.Line]
		if !ok {
			return nil
		}
		fields := make([]string, max(width, len(r.Fields)))
		copy(fields, r.Fields)
		if r.Problem != "" && len(fields) > 0 {
			fields[0] = r.Raw
		}
		return out.Write(append(fields, strconv.Itoa(r.Line), reason))
	})
	out.Flush()
	if err == nil {
		err = out.Error()
	}
	if err != nil {
		return h.inboxFailure(c, fmt.Errorf("invalid rows: %w", err))
	}
	name := strings.TrimSuffix(p.Meta.FileName, ".csv")
	if name == "" || strings.ContainsAny(name, "\"\\\r\n;") || !isPrintableASCII(name) {
		name = "import"
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`-invalid-rows.csv"`)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(buf.Bytes())
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
