import type { Catalogue } from './en.js';

export const zh: Catalogue = {
  'turn.apology': '抱歉，我现在无法回答，请稍后再试。',
  'turn.errorReference': '错误编号：{errorId}',
  'reset.done': '好了：我们重新开始。我不再看到之前的消息。',
  'reset.forbidden': '只有发起这个对话的人才能重新开始它。',
  'inbox.busy': '我还在回复你之前的消息，请等我回复后再发送。',
  'inbound.tooLong': '抱歉，这条消息对我来说太长了。请分成几条较短的消息发送。',
  'inbound.unreadable': '抱歉，我无法读取这条消息。请用纯文本发送。',
  'identity.sharePhone': '请分享你的手机号码，以便我识别你。',
  'identity.unrecognised': '抱歉，我现在无法识别你的身份，请稍后再试。',
  'identity.unavailable': '抱歉，我现在无法核实你的身份，暂时无法回复。请过几分钟再试。',
  'identity.phoneConflict': '这个手机号码已经关联到这里的另一个资料，所以我没有把这个聊天关联到它。我仍会在这个聊天里回复你。',
  'telegram.greeting': '你好！我是{name}。给我发消息或语音，我会回复你。/reset 可以重新开始对话。',
  'telegram.voiceFailed': '抱歉，我没能听清你的语音消息。请再试一次，或者用文字发送。',
  'telegram.voiceOff': '抱歉，我在这里无法收听语音消息。请用文字发送。',
  'telegram.commandStart': '打个招呼，看看我能做什么',
  'telegram.commandReset': '重新开始对话',
  'telegram.description': '{name}：在这个聊天中回答问题的助手。发送文字或语音消息即可开始。',
  'budget.exceeded': '抱歉，本次对话的费用已达上限，我现在无法继续回答。请稍后再试。',
  'focus.nothingToShow': '您目前没有任何预约。',
  'telegram.shortDescription': '{name}：在这个聊天中回答问题的助手。',
};
