package rules

import "slices"

// What the contact may ask us to stop sending, in each language: the objects of "stop sending (me)
// ...", with the determiners that may come before them ("all these", "estos", "ces"). A word matches
// with a plural -s too, so plurals formed otherwise are listed ("promociones", "mensagens",
// "messaggi").
var (
	enDeterminers = []string{"", "this", "these", "that", "those", "all", "all these", "all this", "all the", "the", "your", "any", "more", "such"}
	enThings      = []string{
		"message", "msg", "text", "txt", "sms", "email", "e mail", "mail", "stuff", "junk", "spam", "crap", "garbage", "ad", "advert",
		"promo", "promotion", "offer", "deal", "marketing", "notification",
	}
	esDeterminers = []string{"", "esto", "esta", "eso", "esa", "tanto", "tanta", "tu", "su", "la", "lo", "más"}
	esThings      = []string{
		"mensaje", "correo", "email", "mail", "sms", "texto", "cosa", "publicidad", "promoción", "promociones", "oferta", "spam",
		"basura", "notificación", "notificaciones",
	}
	ptDeterminers = []string{"", "essa", "esse", "esta", "este", "tanta", "tanto", "sua", "seu", "as", "os", "mais"}
	ptThings      = []string{
		"mensagem", "mensagens", "coisa", "email", "e mail", "sms", "torpedo", "propaganda", "promoção", "promoções", "oferta",
		"spam", "notificação", "notificações", "lixo",
	}
	frDeterminers = []string{"", "des", "ces", "vos", "tes", "les", "tous ces", "toutes ces"}
	frThings      = []string{
		"message", "sms", "texto", "mail", "email", "e mail", "courriel", "truc", "pub", "publicité", "promo", "promotion", "offre",
		"spam", "notification",
	}
	deThings = []string{
		"das", "so etwas", "sowas", "so was", "sachen", "nachrichten", "diese nachrichten", "solche nachrichten", "sms", "diese sms",
		"e-mails", "emails", "mails", "werbung", "angebote",
	}
	itDeterminers = []string{"", "questi", "queste", "questa", "tutti questi", "tutte queste", "i vostri", "le vostre", "altri", "altre", "più"}
	itThings      = []string{
		"messaggi", "messaggio", "sms", "email", "e mail", "mail", "roba", "cose", "pubblicità", "promozioni", "offerte", "spam", "notifiche",
	}
)

// The verbs of "stop ..." in Spanish and Portuguese. "para de" and "pare de" are both languages', so
// Spanish leaves them out of the phrases whose words Portuguese would share.
var (
	esStop     = []string{"deja de", "dejen de", "deje de", "dejes de", "dejad de", "para de", "paren de", "pare de", "parad de"}
	esStopOnly = []string{"deja de", "dejen de", "deje de", "dejes de", "dejad de", "paren de", "parad de"}
	ptStop     = []string{"pare de", "para de", "parem de", "parar de"}
	frStop     = []string{"arrêtez de", "arrête de", "arrêter de", "arrêtes de", "cessez de", "cesse de"}
	frStopD    = []string{"arrêtez d", "arrête d", "arrêter d", "arrêtes d", "cessez d", "cesse d"}
	itStop     = []string{"smetti di", "smettete di", "smetta di", "smettila di", "smettetela di", "smettere di"}
)

// optOutLanguages has a list for every language the offline bot writes (its test checks it).
var optOutLanguages = map[string]optOutLanguage{
	"en": {
		phrases: slices.Concat(
			[]string{
				"stop texting", "stop text me", "stop txting", "stop messaging", "stop message me", "stop msging",
				"stop contacting me", "stop emailing me", "stop e mailing me", "stop mailing me",
				"stop spamming", "stop the message", "stop the text", "stop these message", "stop these text",
				"stop all message", "stop all text", "stop receiving message", "stop receiving text", "stop getting message",
				"stop getting text", "stop receiving these", "stop getting these", "stop sending these", "stop sending me these",
			},
			// Not "quit sending": "I quit sending emails at work" is about the writer.
			crossPhrases([]string{"stop"}, []string{"sending", "sending me"}, enDeterminers, enThings),
			crossPhrases([]string{"quit"}, []string{
				"texting me", "txting me", "messaging me", "msging me", "contacting me", "emailing me", "spamming me",
			}),
			crossPhrases([]string{"stop", "quit"}, []string{"bothering me", "harassing me", "pestering me", "bugging me"}),
			crossPhrases([]string{"don't", "dont", "do not", "never"},
				[]string{"text me", "txt me", "message me", "msg me", "contact me", "send me any more", "send me anymore"}),
			[]string{
				"no more message", "no more text", "no more sms", "no more texting", "no more email", "no more spam",
				"remove me", "take me off", "unsubscribe me", "leave me alone", "opt me out", "unsubscribed", "opted out",
				"delete my number", "remove my number", "erase my number", "lose my number",
			},
			crossPhrases([]string{"want to", "wanna", "like to", "wish to", "need to", "how do i", "how to", "how can i", "please", "pls"},
				[]string{"unsubscribe", "opt out", "optout"}),
		),
		// "stop sending me this" asks for nothing more; "stop sending me the invoice twice" asks for
		// one thing less.
		endings: slices.Concat(
			crossPhrases([]string{"stop"}, []string{"sending", "sending me", "emailing", "e mailing", "contacting"},
				[]string{"", "this", "that", "these", "those", "it", "them", "all this", "all that"}),
			[]string{"no more of this", "no more of these", "no more of that"},
		),
		fillers: []string{
			"please", "pls", "plz", "now", "anymore", "any", "more", "again", "already", "thanks", "thank", "you", "thx", "ty", "ok",
			"okay", "asap", "immediately", "right", "ever", "lol", "seriously", "guys", "at", "all", "so", "very", "much",
		},
		messages: []string{
			"please stop", "pls stop", "stop please", "stop pls", "stop it", "stop now", "just stop", "stop stop",
			"stop already", "stop thanks", "stop thank you", "stop sms", "no more", "enough", "stop this", "stop that",
			"stop these", "stop all this",
		},
		// "don't" is "don", "t" as words; "non-stop" is "non", "stop".
		notBefore: []string{"not", "t", "dont", "cant", "cannot", "never", "non"},
	},
	"es": {
		phrases: slices.Concat(
			crossPhrases(esStop, []string{
				"escribirme", "contactarme", "molestarme", "mensajearme", "textearme", "spamearme", "acosarme",
				"mandarme mensaje", "enviarme mensaje",
			}),
			crossPhrases(esStop, []string{"mandarme", "enviarme"}, esDeterminers, esThings),
			crossPhrases(esStopOnly, []string{"mandar", "enviar"}, esDeterminers, esThings),
			crossPhrases([]string{"no me"}, []string{
				"escribas", "escriban", "escriba", "vuelvas a escribir", "vuelvan a escribir", "vuelva a escribir",
				"mandes mensaje", "manden mensaje", "mande mensaje", "envíes mensaje", "envíen mensaje", "envíe mensaje",
				"mandes más", "manden más", "mande más", "envíes más", "envíen más", "envíe más",
				"contactes", "contacten", "contacte", "molestes", "molesten", "moleste",
			}),
			crossPhrases([]string{"no más"}, []string{"mensaje", "correo", "texto", "sms", "publicidad", "spam"}),
			[]string{
				"no quiero más mensaje", "no quiero recibir más", "no quiero recibir mensaje", "ya no quiero recibir",
				"no deseo recibir",
			},
			// "sácame de dudas" and "quítame la duda" clear up a doubt, so these need the list.
			crossPhrases([]string{"sácame de", "sáquenme de", "sáqueme de"}, []string{"la lista", "su lista", "tu lista", "sus lista"}),
			[]string{
				"quítame de", "quítenme de", "quíteme de", "bórrame de", "bórrenme de", "bórreme de",
				"elimíname", "elimínenme", "elimíneme", "dame de baja", "denme de baja", "deme de baja", "darme de baja",
				"me quiero dar de baja", "desuscríbeme", "desuscríbanme", "desuscribirme", "desinscríbeme", "desinscríbanme",
				"borra mi número", "borren mi número", "elimina mi número", "eliminen mi número",
				"déjame en paz", "déjenme en paz", "déjeme en paz", "déjame tranquilo", "déjame tranquila",
				"déjenme tranquilo", "déjenme tranquila",
			},
		),
		// "deja de mandarme esto" asks for nothing more; "deja de mandarme la factura dos veces" asks for
		// one thing less.
		endings: slices.Concat(
			crossPhrases(esStop, []string{"mandarme", "enviarme", "mandármelo", "enviármelo", "mandármela", "enviármela"},
				[]string{"", "esto", "eso", "esta", "esa"}),
			crossPhrases(esStopOnly, []string{"mandar", "enviar"}, []string{"esto", "eso", "esta", "esa"}),
		),
		fillers: []string{
			"por", "favor", "porfa", "porfavor", "ya", "más", "gracias", "ahora", "mismo", "nunca", "jamás", "inmediatamente", "de",
			"una", "vez",
		},
		messages:  []string{"basta", "ya basta", "basta ya", "para", "para ya", "ya para", "no más", "alto"},
		notBefore: []string{"nunca", "jamás"},
		// "no dejes de escribirme": don't stop writing to me. "No, deja de escribirme" is another
		// sentence after the "No,".
		keeps: []string{"no dejes de", "no dejen de", "no deje de", "no dejéis de", "no pares de", "no paren de", "no pare de", "no paréis de"},
	},
	"pt": {
		phrases: slices.Concat(
			crossPhrases(ptStop, []string{
				"me mandar", "me enviar", "me escrever", "me contatar", "me contactar", "me incomodar", "me perturbar", "me encher",
				"mandar mensagem", "mandar mensagens", "enviar mensagem", "enviar mensagens",
			}),
			crossPhrases(ptStop, []string{"mandar", "enviar"}, ptDeterminers, ptThings),
			// Not "não me escreve": "por que não me escreve?" asks why we are silent.
			crossPhrases([]string{"não me"}, []string{
				"mande mensagem", "mande mensagens", "mandem mensagem", "mandem mensagens", "mande mais", "mandem mais",
				"envie mensagem", "envie mensagens", "enviem mensagem", "enviem mensagens", "envie mais", "enviem mais",
				"escreva", "escrevam", "contate", "contatem", "contacte", "contactem", "incomode", "incomodem", "perturbe",
			}),
			crossPhrases([]string{"chega de"}, []string{"mensagem", "mensagens", "sms", "email", "propaganda", "spam"}),
			[]string{
				"não quero receber mensagem", "não quero receber mensagens", "não quero mais receber", "não quero receber mais",
				"não quero mais mensagens", "não desejo receber",
				"me remova", "me remove", "me removam", "remova-me", "me exclua", "me exclui", "me excluam", "exclua-me",
				"me descadastre", "me descadastra", "me descadastrem", "descadastre-me", "me descadastrar",
				"me desinscreva", "me desinscrever", "cancele minha inscrição", "cancela minha inscrição", "cancelar minha inscrição",
				"apague meu número", "apaga meu número", "apaguem meu número", "exclua meu número", "remova meu número",
				"me deixe em paz", "me deixa em paz", "me deixem em paz", "deixe-me em paz",
			},
			// "me tire uma dúvida" and "me tire da dúvida" clear up a doubt, so these need the list.
			crossPhrases([]string{"me tire", "me tira", "me tirem", "tire-me"},
				[]string{"da lista", "dessa lista", "desta lista", "da sua lista", "do cadastro", "do seu cadastro"}),
		),
		endings: crossPhrases(ptStop, []string{"mandar", "enviar"}, []string{"", "isso", "isto"}),
		fillers: []string{"por", "favor", "pfv", "pf", "obrigado", "obrigada", "já", "agora", "mais", "nunca", "imediatamente", "de", "uma", "vez"},
		messages: []string{
			"para", "pare", "parem", "chega", "chega disso", "para com isso", "pare com isso", "parem com isso",
			"para por favor", "pare por favor", "por favor pare",
		},
		notBefore: []string{"nunca", "jamais"},
		// "não pare de me mandar novidades": don't stop sending me news. "Você não para de me mandar
		// mensagem" is a complaint, so "não para de" is not one.
		keeps: []string{"não pare de", "não parem de", "não pares de"},
	},
	"fr": {
		phrases: slices.Concat(
			crossPhrases(frStop, []string{
				"m'écrire", "m'envoyer", "me contacter", "me spammer", "me harceler", "m'harceler", "me texter", "me relancer",
				"me démarcher", "me solliciter", "me déranger", "m'embêter",
			}),
			crossPhrases(frStopD, []string{"envoyer"}, frDeterminers, frThings),
			crossPhrases([]string{"arrêtez", "arrête"}, []string{"les messages", "les sms", "vos messages", "vos sms", "tes messages"}),
			[]string{
				"ne m'écrivez plus", "ne m'écris plus", "ne m'envoyez plus", "ne m'envoie plus",
				// With "ne" as well: "ne" before "veux plus recevoir" would turn it around.
				"ne me contactez plus", "ne me contacte plus", "ne plus recevoir", "ne veux plus recevoir", "veux plus recevoir",
				"ne souhaite plus recevoir", "souhaite plus recevoir",
				"ne plus être contacté", "retirez-moi", "retire-moi", "supprimez-moi", "supprime-moi", "enlevez-moi", "enlève-moi",
				"rayez-moi", "effacez mon numéro", "supprimez mon numéro", "retirez mon numéro",
				"désinscrivez-moi", "désinscris-moi", "me désinscrire", "désabonnez-moi", "désabonne-moi", "me désabonner",
				"laissez-moi tranquille", "laisse-moi tranquille", "laissez-moi en paix", "fichez-moi la paix",
				"fiche-moi la paix", "foutez-moi la paix", "fous-moi la paix",
			},
		),
		// "plus de messages" is "no more messages" at the end of a sentence and "more messages" before
		// a "que".
		endings: slices.Concat(
			crossPhrases(frStopD, []string{"envoyer"}, []string{"", "ça", "cela", "ces trucs"}),
			crossPhrases([]string{"plus de", "assez de", "fini les", "finis les"}, []string{
				"message", "messages", "sms", "texto", "mail", "email", "pub", "publicité", "promo", "spam",
			}),
		),
		fillers: []string{
			"svp", "stp", "s", "il", "vous", "te", "plait", "merci", "maintenant", "plus", "tout", "de", "suite", "immédiatement",
			"désormais",
		},
		messages: []string{"arrête", "arrêtez", "arrêtez svp", "arrêtez merci", "stop svp", "stop merci", "stop sms", "ça suffit"},
		// "n'" is "n" as a word.
		notBefore: []string{"ne", "n", "pas", "jamais"},
	},
	"de": {
		phrases: slices.Concat(
			crossPhrases([]string{"auf", "aufhören"}, []string{
				"mir zu schreiben", "mir zu simsen", "mir zu texten", "mir zu mailen", "mich zu kontaktieren", "mich anzuschreiben",
				"mich zu belästigen", "mich zu nerven", "mich zu spammen", "mich zuzuspammen",
			}),
			crossPhrases([]string{"auf", "aufhören"}, []string{"mir"}, deThings, []string{"zu schicken", "zu senden"}),
			crossPhrases([]string{
				"schreiben sie mir", "schreib mir", "schreibt mir", "schicken sie mir", "schick mir", "schickt mir", "senden sie mir",
				"sende mir",
			}, []string{"nicht mehr", "keine nachrichten", "keine sms", "keine mails", "keine e-mails", "keine werbung"}),
			crossPhrases([]string{"schicken sie mir", "schick mir", "schickt mir", "senden sie mir", "sende mir"},
				[]string{"das", "sowas", "so etwas", "so was", "diese nachrichten", "diese sms"}, []string{"nicht mehr"}),
			crossPhrases([]string{"kontaktieren sie mich", "kontaktiere mich", "kontaktiert mich"}, []string{"nicht mehr"}),
			crossPhrases([]string{"bitte"}, []string{
				"keine nachrichten", "keine sms", "keine mails", "keine e-mails", "keine werbung", "nicht mehr kontaktieren",
				"nicht mehr schreiben", "nicht mehr anschreiben",
			}),
			// Not "ich melde mich ab" or "mich abmelden" alone: "ich muss mich für morgen abmelden" cancels an
			// appointment.
			crossPhrases([]string{"will", "möchte", "kann ich"}, []string{
				"keine nachrichten", "keine sms", "keine weiteren nachrichten", "mich abmelden", "mich austragen",
			}),
			[]string{
				"entfernen sie mich", "entferne mich", "entfernt mich", "streichen sie mich", "streich mich",
				"nehmen sie mich aus", "nimm mich aus", "nehmt mich aus", "nehmen sie mich von", "nimm mich von",
				"löschen sie mich", "lösch mich", "lösche mich", "löscht mich",
				"löschen sie meine nummer", "lösch meine nummer", "löscht meine nummer", "meine nummer löschen",
				"meine nummer entfernen", "mich aus dem verteiler", "mich aus der liste",
				"mich von der liste", "melden sie mich ab", "meld mich ab", "meldet mich ab", "tragen sie mich aus",
				"trag mich aus", "tragt mich aus", "abbestellen",
				"lass mich in ruhe", "lassen sie mich in ruhe", "lasst mich in ruhe",
			},
		),
		// "Keine Nachrichten mehr" only as (nearly) the whole message: "ich bekomme keine Nachrichten
		// mehr" says that ours stopped arriving.
		messages: []string{
			"hör auf", "hört auf", "hören sie auf", "hör auf damit", "hört auf damit", "hören sie auf damit", "aufhören",
			"bitte aufhören", "stopp", "schluss", "schluss jetzt", "es reicht", "keine nachrichten mehr", "keine sms mehr",
			"keine mails mehr", "keine e-mails mehr", "keine werbung mehr", "keine nachrichten mehr bitte", "keine sms mehr bitte",
			"keine nachrichten mehr danke", "keine sms mehr danke",
		},
		// "warum schreiben Sie mir nicht mehr?" asks why we are silent.
		notBefore: []string{"nicht", "nie", "niemals", "kein", "warum", "wieso", "weshalb"},
		notAfter:  []string{"nicht"},
	},
	"it": {
		phrases: slices.Concat(
			// Not "basta scrivermi": it means "just write to me".
			crossPhrases(itStop, []string{
				"scrivermi", "mandarmi", "inviarmi", "contattarmi", "disturbarmi", "messaggiarmi", "spammarmi", "tartassarmi",
			}),
			crossPhrases(itStop, []string{"mandare", "inviare"}, itDeterminers, itThings),
			crossPhrases([]string{"non"}, []string{
				"scrivermi", "scrivetemi", "mi scriva", "mi scrivete", "contattarmi", "contattatemi", "mi contatti",
				"mi contattate", "disturbarmi", "disturbatemi", "mi disturbi",
			}),
			// "non mandarmi il preventivo" is about the quote, not the messages.
			crossPhrases([]string{
				"non mandarmi", "non mandatemi", "non mi mandi", "non mi mandate", "non inviarmi", "non inviatemi", "non mi invii",
				"non mi inviate",
			}, []string{"più", "messaggi", "altri messaggi", "sms"}),
			// "toglimi un dubbio" clears up a doubt, so these need what to take the contact off.
			crossPhrases([]string{"cancellami", "cancellatemi", "mi cancelli", "mi cancellate", "toglimi", "toglietemi", "mi tolga",
				"mi togliete", "eliminami", "eliminatemi", "mi elimini", "mi eliminate"}, []string{"dalla", "dai", "dal", "da"}),
			crossPhrases([]string{"basta", "niente più", "non voglio più"}, []string{"messaggi", "sms", "email", "mail", "pubblicità", "spam"}),
			crossPhrases([]string{"basta con"}, []string{"i", "questi", "tutti questi"}, []string{"messaggi", "sms"}),
			[]string{
				"rimuovimi", "rimuovetemi", "mi rimuova", "mi rimuovete", "eliminami", "eliminatemi",
				"rimuovete il mio numero", "cancella il mio numero", "cancellate il mio numero", "elimina il mio numero",
				"eliminate il mio numero", "disiscrivimi", "disiscrivetemi", "mi disiscriva", "voglio disiscrivermi",
				"vorrei disiscrivermi", "come disiscrivermi", "voglio cancellarmi", "vorrei cancellarmi",
				"annulla la mia iscrizione", "annullate la mia iscrizione", "cancella la mia iscrizione", "cancellate la mia iscrizione",
				"non voglio più ricevere", "non voglio ricevere messaggi", "non desidero ricevere",
				"lasciami in pace", "lasciatemi in pace", "mi lasci in pace", "lasciami stare", "lasciatemi stare", "mi lasci stare",
			},
		),
		endings: crossPhrases(itStop, []string{"mandare", "inviare"}, []string{"", "questo", "questa roba", "queste cose"}),
		fillers: []string{"per", "favore", "grazie", "più", "ora", "subito", "adesso", "mai"},
		messages: []string{
			"basta", "basta così", "basta grazie", "basta per favore", "smettila", "smettetela", "cancellami", "cancellatemi",
			"stop grazie",
		},
		// "perché non mi scrivete più?" asks why we are silent; "se non mi scrivete" is a condition.
		notBefore: []string{"non", "mai", "perché", "se"},
	},
}
