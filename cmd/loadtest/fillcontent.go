package main

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// The fill's contacts and messages: names, emails and texts drawn from the lists below by a hash of
// the run id, the conversation and the message, so that a run is the same every time and the contact
// search (docs/contacts.md) and the conversation list have varied text to work on.

var fillFirstNames = []string{
	"Maria", "Sofia", "Lucas", "Ana", "Mateo", "Liam", "Olivia", "Noah", "Emma", "Aisha",
	"Yuki", "Chen", "Priya", "Omar", "Fatima", "Lukas", "Elena", "Diego", "Camila", "Hannah",
	"Ravi", "Mei", "Kwame", "Amara", "Isabella", "Gabriel", "Chloe", "Daniel", "Sara", "Hugo",
	"Leila", "Ivan", "Nina", "Tomas", "Zara", "Pedro", "Julia", "Ethan", "Grace", "Kenji",
}

var fillLastNames = []string{
	"Silva", "Santos", "Smith", "Johnson", "Garcia", "Martinez", "Tanaka", "Kim", "Nguyen", "Patel",
	"Khan", "Mueller", "Rossi", "Dubois", "Kowalski", "Novak", "Okafor", "Mensah", "Cohen", "Haddad",
	"Jensen", "Larsen", "Costa", "Ferreira", "Lopez", "Brown", "Wilson", "Taylor", "Anderson", "Moreau",
	"Schmidt", "Ivanova", "Petrov", "Sato", "Wang", "Li", "Singh", "Ali", "Hernandez", "Okonkwo",
}

var fillEmailDomains = []string{"example.com", "example.org", "example.net", "mail.example.com"}

var fillProducts = []string{
	"linen shirt", "running shoes", "leather bag", "wool scarf", "denim jacket", "summer dress",
	"rain coat", "backpack", "sunglasses", "silk blouse", "hiking boots", "wrist watch",
}

var fillColors = []string{"black", "white", "navy", "olive", "red", "beige", "grey", "green"}

var fillCities = []string{
	"Lisbon", "Porto", "Madrid", "Austin", "Toronto", "Berlin", "Lyon", "Milan", "Dublin", "Warsaw",
	"Denver", "Seattle", "Boston", "Lagos", "Nairobi", "Osaka",
}

var fillDays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

var fillTimes = []string{"9:30", "10:00", "11:15", "1:00 pm", "2:30 pm", "4:00 pm", "5:45 pm"}

// fillExchanges are the senders' messages, each with the business's answer to it. No message may
// read as a consent keyword or a request to opt out (TestFillTextsAreNotOptOuts), or the contact would
// opt out and the replies to it be refused.
var fillExchanges = []struct{ ask, answer string }{
	{"Hi, I'd like to know the price of the {product}.", "Hi {first}! The {product} is ${price} and it's in stock."},
	{"Hello! Do you deliver to {city}?", "Yes, we deliver to {city} in 2-3 business days."},
	{"Is the {product} still available in {color}?", "It's back in stock in {color} from {day}, {first}."},
	{"Can I book a fitting for {day} at {time}?", "Sure {first}, {day} at {time} is booked. See you then!"},
	{"What are your opening hours on {day}?", "We're open from 9 to 6 on {day}."},
	{"I ordered the {product} last week and it hasn't arrived yet. Order #{order}.",
		"Sorry about the delay, {first}. Order #{order} ships today and you'll get the tracking link by email."},
	{"Thanks! And how long does shipping to {city} take?", "Shipping to {city} takes about {qty} days."},
	{"Do you have a discount if I buy {qty}?", "For {qty} or more we give 10% off the whole order."},
	{"Great, can I pay by card?", "Yes, we accept all major cards, Apple Pay and PayPal."},
	{"Perfect, {day} works for me.", "Great, {day} it is. Thanks {first}, anything else I can help with?"},
	{"Could you send me the size guide for the {product}?", "Here's the size guide for the {product}: https://example.com/size-guide"},
	{"Is there a warranty on the {product}?", "The {product} has a 2-year warranty."},
	{"I'm interested in the {product}, can you tell me more about it?",
		"Of course! The {product} comes in black, white and {color}, and it's ${price}."},
	{"Saw your post on Instagram, is the {product} on sale?", "Yes! The {product} is ${price} until {day}."},
	{"Which colours does the {product} come in?", "The {product} comes in {color}, black and white."},
	{"Can I return it if it doesn't fit?", "Returns are free within 30 days, {first}."},
	{"Do you have the {product} in a size M?", "We do! I've reserved one in M for you until {day}."},
	{"My friend in {city} recommended you. What's new this season?",
		"Welcome {first}! This season's favourite is the {product}, ${price}."},
	{"ok thanks, I'll take {qty} of them", "Great choice! {qty} are set aside for you, {first}."},
	{"Is the store in {city} open on {day}?", "Yes, the {city} store is open on {day} from 10 to 7."},
}

// fillPersonInfo is the sender of a conversation: a first and a last name, and for three in four an
// email unique to the run and the sender (the ingest finds a new sender's contact by its email too:
// docs/performance.md, "Ingest batches are stored set-based"), so that each sender is a contact of its own.
type fillPersonInfo struct{ First, Last, Email string }

// fillPerson is the sender of conversation i.
func fillPerson(runID string, i int) fillPersonInfo {
	h := fillHash(runID, i, -1)
	p := fillPersonInfo{
		First: fillFirstNames[h%uint64(len(fillFirstNames))],
		Last:  fillLastNames[(h>>8)%uint64(len(fillLastNames))],
	}
	if (h>>16)%4 != 0 {
		p.Email = strings.ToLower(p.First+"."+p.Last) + "." + strconv.Itoa(i) + "." + fillRunTag(runID) + "@" +
			fillEmailDomains[(h>>20)%uint64(len(fillEmailDomains))]
	}
	return p
}

// fillIncomingText is the body of incoming message j (even) of conversation i.
func fillIncomingText(runID string, i, j int) string {
	h := fillHash(runID, i, j)
	return fillText(fillExchanges[h%uint64(len(fillExchanges))].ask, h, fillPerson(runID, i))
}

// fillReplyText is the body of outgoing message j (odd) of conversation i: the answer to message j-1,
// with the same product, city and day.
func fillReplyText(runID string, i, j int) string {
	h := fillHash(runID, i, j-1)
	return fillText(fillExchanges[h%uint64(len(fillExchanges))].answer, h, fillPerson(runID, i))
}

// fillText fills a template's {slots} from h's bits.
func fillText(template string, h uint64, p fillPersonInfo) string {
	pick := func(list []string, shift uint) string { return list[(h>>shift)%uint64(len(list))] }
	return strings.NewReplacer(
		"{first}", p.First,
		"{product}", pick(fillProducts, 8),
		"{color}", pick(fillColors, 16),
		"{city}", pick(fillCities, 24),
		"{day}", pick(fillDays, 32),
		"{time}", pick(fillTimes, 40),
		"{qty}", strconv.FormatUint(2+(h>>48)%4, 10),
		"{price}", strconv.FormatUint(19+(h>>44)%80, 10)+".90",
		"{order}", strconv.FormatUint(10000+(h>>20)%90000, 10),
	).Replace(template)
}

// fillHash mixes the run id, the conversation and the message (-1: the sender) into 64 bits
// (FNV-1a, then SplitMix64's finalizer, so that neighbouring conversations differ in every bit).
func fillHash(runID string, i, j int) uint64 {
	f := fnv.New64a()
	_, _ = f.Write([]byte(runID))
	x := f.Sum64() ^ (uint64(i)*0x9e3779b97f4a7c15 + uint64(j+1)*0xbf58476d1ce4e5b9)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// fillRunTag is a short tag of the run id for the emails, so that two runs on one account do not give
// two senders the same email (which would make them one contact).
func fillRunTag(runID string) string {
	f := fnv.New32a()
	_, _ = f.Write([]byte(runID))
	return strconv.FormatUint(uint64(f.Sum32()%(36*36*36*36)), 36)
}
