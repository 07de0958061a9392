/** The JSON body of every error response from the HTTP server. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string };
}

/** Builds `{ error: { code, message } }`; `message` says how to fix the request and never carries secrets. */
export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}
