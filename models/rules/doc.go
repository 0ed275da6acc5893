// Package rules holds the service's rules that are pure functions of their facts: quiet-hours
// arithmetic and the time zones a phone number implies, the shape and classification of consent
// keywords, the consent state a change leads to, and the outgoing door's decision given what it knows
// of the contact and the channel. Nothing here reads a database, Redis or the network; package models
// gathers the facts (with SQL) and calls these, and re-exports the types its callers use.
//
// Errors returned here are plain: they carry the client-facing message, and models turns them into
// its VALIDATION_ERROR.
package rules
