// The chat page's own texts by language; chat.js picks one from the browser's languages, English when none fits.
'use strict';

window.palaverTexts = {
  en: {
    conversations: 'Conversations', conversation: 'Conversation', newChat: 'New chat', newChatTitle: 'Start a new conversation',
    message: 'Message', placeholder: 'Write a message…', send: 'Send', thinking: 'Thinking…', typing: 'Typing…',
    unreachable: 'Could not reach the server:', closedEarly: 'The connection closed before the answer was complete. Please try again.',
    agentFailed: 'The agent could not answer.', showConversations: 'Show conversations', closeChat: 'Close chat',
  },
  ru: {
    conversations: 'Разговоры', conversation: 'Разговор', newChat: 'Новый чат', newChatTitle: 'Начать новый разговор',
    message: 'Сообщение', placeholder: 'Напишите сообщение…', send: 'Отправить', thinking: 'Думает…', typing: 'Печатает…',
    unreachable: 'Не удалось связаться с сервером:', closedEarly: 'Соединение прервалось до конца ответа. Попробуйте ещё раз.',
    agentFailed: 'Агент не смог ответить.', showConversations: 'Показать разговоры', closeChat: 'Закрыть чат',
  },
  uk: {
    conversations: 'Розмови', conversation: 'Розмова', newChat: 'Новий чат', newChatTitle: 'Почати нову розмову',
    message: 'Повідомлення', placeholder: 'Напишіть повідомлення…', send: 'Надіслати', thinking: 'Думає…', typing: 'Друкує…',
    unreachable: 'Не вдалося зв’язатися з сервером:', closedEarly: 'З’єднання перервалося до кінця відповіді. Спробуйте ще раз.',
    agentFailed: 'Агент не зміг відповісти.', showConversations: 'Показати розмови', closeChat: 'Закрити чат',
  },
  zh: {
    conversations: '对话', conversation: '对话', newChat: '新对话', newChatTitle: '开始新的对话',
    message: '消息', placeholder: '输入消息…', send: '发送', thinking: '思考中…', typing: '正在输入…',
    unreachable: '无法连接服务器：', closedEarly: '回答完成前连接已断开，请重试。',
    agentFailed: '助手无法回答。', showConversations: '显示对话列表', closeChat: '关闭聊天',
  },
};
