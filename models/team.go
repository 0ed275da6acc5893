package models

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// The team's side of a conversation (README, "The inbox"): who owns it, and the notes they leave.

// TeamMember is a user as GET /v1/users lists it.
type TeamMember struct {
	ID        string `json:"id"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	Available bool   `json:"available"`
}

// Assignee is who owns a conversation, as conversations carry it.
type Assignee struct {
	UserID string `json:"userId"`
	Email  string `json:"email"`
}

// TeamMembers lists the account's users, oldest first.
func (s *Store) TeamMembers(ctx context.Context, accountID string) ([]TeamMember, error) {
	var users []User
	if err := s.db.NewSelect().Model(&users).Where("account_id = ?", accountID).Order("created_at", "id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("team members: %w", err)
	}
	out := make([]TeamMember, len(users))
	for i, u := range users {
		out[i] = TeamMember{ID: u.ID, Email: u.Email, Role: u.Role, Available: u.Available}
	}
	return out, nil
}

// SetAvailable says whether a user takes hand-offs in turn. Errors: NOT_FOUND (another account's
// user too).
func (s *Store) SetAvailable(ctx context.Context, accountID, userID string, available bool) (*TeamMember, error) {
	u := new(User)
	err := s.db.NewUpdate().Model(u).Set("available = ?", available).Where("id = ? AND account_id = ?", userID, accountID).
		Returning(s.columnsOf((*User)(nil), "")).Scan(ctx)
	if isNoRows(err) {
		return nil, notFound("user")
	}
	if err != nil {
		return nil, fmt.Errorf("set available: %w", err)
	}
	return &TeamMember{ID: u.ID, Email: u.Email, Role: u.Role, Available: u.Available}, nil
}

// Assign gives the conversation with the contact to a user of the account (nil: unassigned) and
// returns the new assignee. An unavailable user can be assigned by hand. Errors: NOT_FOUND for
// another account's contact, VALIDATION_ERROR for a user who is not the account's.
func (s *Store) Assign(ctx context.Context, accountID, contactID string, userID *string) (*Assignee, error) {
	var assignee *Assignee
	if userID != nil {
		u := new(User)
		err := s.db.NewSelect().Model(u).Where("id = ? AND account_id = ?", *userID, accountID).Scan(ctx)
		if isNoRows(err) || len(*userID) > maxIDLength {
			return nil, Errorf(CodeValidation, "userId does not name a user of this account")
		}
		if err != nil {
			return nil, fmt.Errorf("assign: %w", err)
		}
		assignee = &Assignee{UserID: u.ID, Email: u.Email}
	}
	if contactID == "" || len(contactID) > maxIDLength {
		return nil, notFound("contact")
	}
	q := s.db.NewUpdate().Model((*Contact)(nil)).Set("assignee_id = ?", userID).
		Where("id = ? AND account_id = ?", contactID, accountID)
	if userID != nil {
		// RemoveUser may remove the user after the look-up above: the write assigns only a user who
		// is still there. On PostgreSQL a removal that commits after this statement's snapshot is
		// caught by the foreign key to users, whose check waits for it.
		q = q.Where("EXISTS (SELECT 1 FROM users AS u WHERE u.id = ? AND u.account_id = ?)", *userID, accountID)
	}
	res, err := q.Exec(ctx)
	if isForeignKeyViolation(err) {
		return nil, Errorf(CodeValidation, "userId does not name a user of this account")
	}
	if err != nil {
		return nil, fmt.Errorf("assign: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if userID != nil {
			exists, err := s.db.NewSelect().Model((*User)(nil)).Where("id = ? AND account_id = ?", *userID, accountID).Exists(ctx)
			if err != nil {
				return nil, fmt.Errorf("assign: %w", err)
			}
			if !exists {
				return nil, Errorf(CodeValidation, "userId does not name a user of this account")
			}
		}
		return nil, notFound("contact")
	}
	s.emit(ctx, accountID, EventContactAssigned, contactAssigned{ContactID: contactID, Assignee: assignee})
	return assignee, nil
}

// EventContactAssigned tells open inbox pages that a conversation changed hands; data
// {"contactId","assignee"}.
const EventContactAssigned = "contact.assigned"

type contactAssigned struct {
	ContactID string    `json:"contactId"`
	Assignee  *Assignee `json:"assignee"`
}

// assignInTurn gives an unassigned conversation to the next available user of the account, the one
// assigned least recently first (never assigned before anyone), when a hand-off needs a person. It
// never takes a conversation from its assignee. It returns the assignee, nil when the conversation
// had one already or nobody is available.
func assignInTurn(ctx context.Context, tx bun.Tx, accountID, contactID string) (*Assignee, error) {
	unassigned, err := tx.NewSelect().Model((*Contact)(nil)).Where("id = ? AND assignee_id IS NULL", contactID).Exists(ctx)
	if err != nil || !unassigned {
		return nil, err
	}
	// All the account's available users, locked: a hand-off raised meanwhile waits, then sees this
	// one's turn taken. (Locking only the first in line would let both pick the same person.)
	q := tx.NewSelect().Model((*User)(nil)).Column("id", "email", "last_assigned_at", "created_at").
		Where("account_id = ? AND available", accountID).Order("id")
	if tx.Dialect().Name() != dialect.SQLite {
		q = q.For("UPDATE")
	}
	var users []User
	if err := q.Scan(ctx, &users); err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, nil
	}
	next := users[0]
	for _, u := range users[1:] {
		if before(u, next) {
			next = u
		}
	}
	// The user is checked in the write too, as Assign does (on PostgreSQL the lock above already keeps
	// a removal waiting until this transaction ends).
	res, err := tx.NewUpdate().Model((*Contact)(nil)).Set("assignee_id = ?", next.ID).Where("id = ? AND assignee_id IS NULL", contactID).
		Where("EXISTS (SELECT 1 FROM users AS u WHERE u.id = ? AND u.account_id = ?)", next.ID, accountID).Exec(ctx)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, nil
	}
	if _, err := tx.NewUpdate().Model((*User)(nil)).Set("last_assigned_at = ?", now()).Where("id = ?", next.ID).Exec(ctx); err != nil {
		return nil, err
	}
	return &Assignee{UserID: next.ID, Email: next.Email}, nil
}

// before reports whether a's turn comes before b's: never assigned first, then the least recently
// assigned, then the longest on the team.
func before(a, b User) bool {
	switch {
	case (a.LastAssignedAt == nil) != (b.LastAssignedAt == nil):
		return a.LastAssignedAt == nil
	case a.LastAssignedAt != nil && !a.LastAssignedAt.Equal(*b.LastAssignedAt):
		return a.LastAssignedAt.Before(*b.LastAssignedAt)
	case !a.CreatedAt.Equal(b.CreatedAt):
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// teamAuthor is the account's user who writes a team message or note: userID, or the account's owner
// when it is "" (an API key). Errors: VALIDATION_ERROR for a user who is not the account's.
func (s *Store) teamAuthor(ctx context.Context, accountID, userID string) (*Assignee, error) {
	u := new(User)
	q := s.db.NewSelect().Model(u).ModelTableExpr("users AS u").Column("u.id", "u.email")
	if userID == "" {
		q = q.Join("JOIN accounts AS a ON a.owner_user_id = u.id").Where("a.id = ?", accountID)
	} else {
		q = q.Where("u.id = ? AND u.account_id = ?", userID, accountID)
	}
	if err := q.Scan(ctx); err != nil {
		if isNoRows(err) {
			return nil, Errorf(CodeValidation, "the author is not a user of this account")
		}
		return nil, fmt.Errorf("team author: %w", err)
	}
	return &Assignee{UserID: u.ID, Email: u.Email}, nil
}

// Note is a private note the team left on a conversation.
type Note struct {
	bun.BaseModel `bun:"table:notes"`

	ID          string    `bun:"id,pk" json:"id"`
	AccountID   string    `bun:"account_id" json:"-"`
	ContactID   string    `bun:"contact_id" json:"-"`
	AuthorID    string    `bun:"author_id" json:"-"`
	AuthorEmail string    `bun:"author_email" json:"-"`
	Body        string    `bun:"body" json:"body"`
	CreatedAt   time.Time `bun:"created_at" json:"at"`

	Author *Assignee `bun:"-" json:"author"`
}

// maxTeamText bounds a note's and a canned reply's body.
const maxTeamText = 4000

// teamText checks a note's or a canned reply's body: 1 to 4,000 characters, not blank.
func teamText(field, body string) (string, error) {
	if strings.TrimSpace(body) == "" {
		return "", Errorf(CodeValidation, "%s is required", field)
	}
	if err := checkText(field, body, maxTeamText); err != nil {
		return "", err
	}
	return strings.TrimSpace(body), nil
}

// EventNoteCreated tells open inbox pages that a note was left on a conversation; data the note with
// its contactId.
const EventNoteCreated = "note.created"

// AddNote leaves a note on the conversation with the contact, written by the account's user authorID
// ("": the owner, for an API key). Errors: NOT_FOUND for another account's contact,
// VALIDATION_ERROR for an empty, blank or over-long body.
func (s *Store) AddNote(ctx context.Context, accountID, contactID, authorID, body string) (*Note, error) {
	body, err := teamText("body", body)
	if err != nil {
		return nil, err
	}
	if _, err := s.ContactByID(ctx, accountID, contactID); err != nil {
		return nil, err
	}
	author, err := s.teamAuthor(ctx, accountID, authorID)
	if err != nil {
		return nil, err
	}
	n := &Note{ID: newID(prefixNote), AccountID: accountID, ContactID: contactID, AuthorID: author.UserID, AuthorEmail: author.Email, Body: body, CreatedAt: now()}
	if _, err := s.db.NewInsert().Model(n).Exec(ctx); err != nil {
		return nil, fmt.Errorf("add note: %w", err)
	}
	n.Author = &Assignee{UserID: n.AuthorID, Email: n.AuthorEmail}
	s.emit(ctx, accountID, EventNoteCreated, noteEvent{Note: n, ContactID: contactID})
	return n, nil
}

type noteEvent struct {
	*Note
	ContactID string `json:"contactId"`
}

// Notes lists the notes on the conversation with the contact, oldest first. Errors: NOT_FOUND.
func (s *Store) Notes(ctx context.Context, accountID, contactID string) ([]Note, error) {
	if _, err := s.ContactByID(ctx, accountID, contactID); err != nil {
		return nil, err
	}
	var out []Note
	if err := s.db.NewSelect().Model(&out).Where("contact_id = ? AND account_id = ?", contactID, accountID).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	for i := range out {
		out[i].Author = &Assignee{UserID: out[i].AuthorID, Email: out[i].AuthorEmail}
	}
	return out, nil
}

// CannedReply is a saved answer, offered in the inbox's reply box by "/" and its shortcut.
type CannedReply struct {
	bun.BaseModel `bun:"table:canned_replies"`

	ID        string    `bun:"id,pk" json:"id"`
	AccountID string    `bun:"account_id" json:"-"`
	Shortcut  string    `bun:"shortcut" json:"shortcut"`
	Body      string    `bun:"body" json:"body"`
	CreatedAt time.Time `bun:"created_at" json:"createdAt"`
	UpdatedAt time.Time `bun:"updated_at" json:"updatedAt"`
}

// maxShortcut bounds a canned reply's shortcut.
const maxShortcut = 32

// cleanShortcut checks a shortcut: 1 to 32 characters without spaces, as typed after "/" (a leading
// "/" is dropped).
func cleanShortcut(v string) (string, error) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "/")
	switch n := utf8.RuneCountInString(v); {
	case n == 0:
		return "", Errorf(CodeValidation, "shortcut is required")
	case n > maxShortcut:
		return "", Errorf(CodeValidation, "shortcut must be at most %d characters", maxShortcut)
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' }) >= 0:
		return "", Errorf(CodeValidation, "shortcut must be one word: no spaces or slashes")
	}
	return v, nil
}

// CannedReplies lists the account's canned replies by shortcut.
func (s *Store) CannedReplies(ctx context.Context, accountID string) ([]CannedReply, error) {
	out := []CannedReply{}
	if err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("lower(shortcut), id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("canned replies: %w", err)
	}
	return out, nil
}

// SaveCannedReply creates a canned reply (id "") or replaces one's shortcut and body. Errors:
// VALIDATION_ERROR, CONFLICT for a shortcut the account has already (in any case), NOT_FOUND for
// another account's reply.
func (s *Store) SaveCannedReply(ctx context.Context, accountID, id, shortcut, body string) (*CannedReply, error) {
	shortcut, err := cleanShortcut(shortcut)
	if err != nil {
		return nil, err
	}
	if body, err = teamText("body", body); err != nil {
		return nil, err
	}
	at := now()
	r := &CannedReply{ID: id, AccountID: accountID, Shortcut: shortcut, Body: body, CreatedAt: at, UpdatedAt: at}
	if id == "" {
		r.ID = newID(prefixCanned)
		_, err = s.db.NewInsert().Model(r).Exec(ctx)
	} else {
		err = s.db.NewUpdate().Model(r).Column("shortcut", "body", "updated_at").Where("id = ? AND account_id = ?", id, accountID).
			Returning("created_at").Scan(ctx, &r.CreatedAt)
		if isNoRows(err) {
			return nil, notFound("canned reply")
		}
	}
	if isUniqueViolation(err) {
		return nil, Errorf(CodeConflict, "the shortcut /%s is taken", shortcut)
	}
	if err != nil {
		return nil, fmt.Errorf("save canned reply: %w", err)
	}
	return r, nil
}

// DeleteCannedReply deletes one of the account's canned replies. Errors: NOT_FOUND.
func (s *Store) DeleteCannedReply(ctx context.Context, accountID, id string) error {
	res, err := s.db.NewDelete().Model((*CannedReply)(nil)).Where("id = ? AND account_id = ?", id, accountID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete canned reply: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("canned reply")
	}
	return nil
}

// FillCannedReply is a canned reply's body for the contact: {{firstName}} and {{lastName}} as in
// campaign messages (Personalize).
func FillCannedReply(r *CannedReply, c *Contact) string { return Personalize(r.Body, c) }
