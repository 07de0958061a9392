/**
 * What Palaver itself says to a person (not the agent), in English: the reference catalogue. Every key here must be
 * in the other catalogues too (the type checker holds them to it). Texts are ICU messages: `{name}` is a value,
 * `{count, plural, one {…} other {…}}` a plural.
 */
export const en = {
  'turn.apology': 'Sorry, I cannot answer right now. Please try again in a moment.',
  'turn.errorReference': 'Error reference: {errorId}',
  'turn.toolWorking': 'Working on it…',
  'reset.done': 'Done: we start afresh. I no longer see our earlier messages.',
  'reset.forbidden': 'Only the person who started this conversation can reset it.',
  'inbox.busy': 'I am still answering your earlier messages; please wait for my reply before sending more.',
  'web.tooManyRuns': 'You already have several messages waiting for an answer. Please wait for them before sending more.',
  'web.tooManyRunsFromAddress': 'Too many chats are open from your network right now. Please try again in a moment.',
  'web.attachmentsQuota': 'You have sent as many files as this chat can keep for you. Please send text, or ask the team to help you another way.',
  'web.attachmentBytesFromAddress': 'Too many files were sent from your network in the last hour. Please try again later.',
  'web.tooManyConversations': 'You have started many new conversations in a short time. Please continue an earlier one, or try again later.',
  'web.operatorTeam': 'Support team',
  'inbound.tooLong': 'Sorry, that message is too long for me. Could you send it in shorter parts?',
  'inbound.unreadable': 'Sorry, I could not read that message. Could you send it as plain text?',
  'identity.sharePhone': 'Please share your phone number so that I can recognise you.',
  'identity.unrecognised': 'Sorry, I could not recognise you right now. Please try again a little later.',
  'identity.unavailable': 'Sorry, I cannot check who you are right now, so I cannot answer yet. Please try again in a few minutes.',
  'identity.phoneConflict':
    'This phone number is already linked to another profile here, so I have not linked this chat to it. I will still answer you in this chat.',
  'telegram.greeting': 'Hello! I am {name}. Write me a message, or send a voice message, and I will answer. /reset starts our conversation afresh.',
  'telegram.voiceFailed': 'Sorry, I could not make out your voice message. Could you try again, or write it as text?',
  'telegram.voiceOff': 'Sorry, I cannot listen to voice messages here. Could you write it as text?',
  'telegram.commandStart': 'Say hello and see what I can do',
  'telegram.commandReset': 'Start the conversation afresh',
  'telegram.description': '{name}: an assistant that answers in this chat. Write a message or send a voice message to begin.',
  'budget.exceeded': 'Sorry, the spending limit for our conversation has been reached, so I cannot answer more right now. Please try again later.',
  'limits.perPerson': 'You are sending messages faster than I can answer. Your messages are saved; please wait a while before writing again.',
  'reply.cut': '[This answer was too long and has been shortened.]',
  'focus.nothingToShow': 'You have nothing booked right now.',
  'handoff.shortly': 'I have passed our conversation to a person from our team. They will answer you here shortly.',
  'handoff.later': 'I have passed our conversation to a person from our team. They will answer you here when our working hours begin: {when}.',
  'handoff.noTime': 'I have passed our conversation to a person from our team. They will answer you here.',
  'approval.question': 'Before I go on, I need your yes:\n{summary}',
  'approval.answerInWords': 'Reply "yes" to go ahead or "no" to cancel.',
  'approval.askAgain': 'I did not understand. Should I go ahead with this? Please answer "yes" or "no":\n{summary}',
  'approval.approve': 'Approve',
  'approval.decline': 'Decline',
  'approval.approved': '✅ Approved',
  'approval.declined': '❌ Declined',
  'approval.expired': '⌛ No answer in time: not done',
  'approval.alreadyDecided': 'This was already decided.',
  'approval.notYours': 'Only the person who was asked can decide this.',
  'approval.byOperator': 'A member of our team decides this one.',
  'approval.unknown': 'This request is no longer open.',
  'telegram.shortDescription': '{name}: an assistant that answers in this chat.',
} as const satisfies Record<string, string>;

/** The name of one of Palaver's own texts. */
export type SystemTextKey = keyof typeof en;

/** A complete catalogue: every text, in one language. */
export type Catalogue = Readonly<Record<SystemTextKey, string>>;
