// Every error code the service answers with, and what it means, in one list: the OpenAPI document and the docs
// are generated from it, and a test checks that every code raised in the source is here. Statuses stay in
// src/errors.ts (statusOf).

export const ERROR_CODES: Record<string, string> = {
  no_api_key_in_request: 'the request has no Forum-Api-Key header',
  api_key_not_found: 'no key has this value',
  api_key_inactive: 'the key was revoked or has expired',
  api_scope_missing: 'the key lacks a scope the operation needs (params.scope, or params.scopes when minting a key)',
  api_user_header_not_allowed: 'Forum-Api-User was sent with a key that is not a super-user key',
  invalid_api_user: 'Forum-Api-User names no user',
  do_not_have_permission: 'the visitor lacks the permission (a group or category rule, or admin rights)',
  endpoint_not_found: 'no route at this path',
  method_not_allowed: 'the path exists, the method does not (the Allow header lists the methods)',
  required_input_missing: 'required fields are missing (params.missing lists them all)',
  invalid_input: 'a value is malformed or out of range (params.field names it)',
  request_too_large: 'the body is over the limit (params.limit)',
  operation_too_expensive: 'a GraphQL operation is over a limit (params.kind, value, limit)',
  operation_timeout: 'the operation ran past the execution deadline (params.limit)',
  persisted_document_required: 'the server runs trusted documents only',
  persisted_document_not_found: 'no trusted document has this hash',
  server_error: 'anything unexpected; it is logged',
  server_busy:
    'too many uploads at once, or a write the database gave up on because another change to the same rows came at the same moment (nothing was changed); retry after Retry-After seconds',
  server_starting: 'the service is starting; retry in a moment',
  service_unavailable: 'the database cannot be reached right now; retry after Retry-After seconds',
  'mc_dm_api_error.rate_limited': 'too many requests, comments or failed URL probes; retry after Retry-After seconds',
  'mc_dm_api_error.category_not_found': 'no category has this id',
  'mc_dm_api_error.download_not_found': 'no download has this id',
  'mc_dm_api_error.comment_not_found': 'no comment has this id',
  'mc_dm_api_error.file_not_found': 'no file has this id (or it was soft-deleted)',
  'mc_dm_api_error.version_not_found': 'no version has this id',
  'mc_dm_api_error.user_not_found': 'no user has this id',
  'mc_dm_api_error.prefix_not_found': 'no prefix has this id',
  'mc_dm_api_error.api_key_not_found': 'no API key has this id',
  'mc_dm_api_error.group_not_found': 'no group has this name',
  'mc_dm_api_error.category_hard_delete_required': 'a category delete must say hard=1',
  'mc_dm_api_error.category_not_empty':
    'a top-level category that holds downloads cannot be deleted under the reassign policy',
  'mc_dm_api_error.download_not_deleted': 'only a soft-deleted download can be restored',
  'mc_dm_api_error.download_not_moderated': 'only a download awaiting approval (moderated) can be approved or rejected',
  'mc_dm_api_error.comment_not_moderated': 'only a comment awaiting approval (moderated) can be approved or rejected',
  'mc_dm_api_error.prefix_not_allowed': 'the prefix is not assigned to the category',
  'mc_dm_api_error.versioning_disabled': 'the category does not keep versions',
  'mc_dm_api_error.too_many_team_members': 'the download has max_team_members already',
  'mc_dm_api_error.message_empty': 'a comment message cannot be empty',
  'mc_dm_api_error.username_taken': 'another user has this username',
  'mc_dm_api_error.upload_exclusive': 'send a file or an external_url, not both',
  'mc_dm_api_error.upload_required': 'send a file or an external_url',
  'mc_dm_api_error.upload_exceeds_php_limit':
    'the upload is larger than the server limit (MAX_UPLOAD_BYTES); nothing is kept',
  'mc_dm_api_error.processor_rejected':
    'a check refused the file (params.processor, params.reason); the row is kept as failed',
  'mc_dm_api_error.too_many_files':
    'the version has max_files_per_version files already (or one, without allow_multi_file)',
  'mc_dm_api_error.external_url_forbidden': 'the URL may not be fetched (scheme, or a private or reserved address)',
  'mc_dm_api_error.external_url_unreachable': 'fetching the URL failed',
  'mc_dm_api_error.file_not_available': 'the file failed validation, or its bytes are missing from storage (404)',
};
